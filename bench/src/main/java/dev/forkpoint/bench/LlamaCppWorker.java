package dev.forkpoint.bench;

import de.kherud.llama.InferenceParameters;
import de.kherud.llama.LlamaModel;
import de.kherud.llama.LlamaOutput;
import de.kherud.llama.ModelParameters;


/**
 * The child process that runs llama.cpp (de.kherud:llama) for {@link LlamaCppEngine}, so that its memory, native
 * threads and log output stay apart from Forkpoint's. Arguments: model threads ctx batch. Commands on stdin, one per
 * line: {@code tokenize TEXT}, {@code run MAX_TOKENS TEXT}, {@code rss}, {@code quit}. Replies on stdout start with
 * {@link WorkerProtocol#REPLY}; anything else on stdout is the library's own chatter. llama.cpp logs (timings included) go to stderr.
 */
public final class LlamaCppWorker {

    private LlamaCppWorker() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: LlamaCppWorker MODEL THREADS CTX BATCH");
            System.exit(2);
        }
        int threads = Integer.parseInt(args[1]);
        int batch = Integer.parseInt(args[3]);
        var params = new ModelParameters().setModel(args[0]).setThreads(threads).setThreadsBatch(threads)
                .setCtxSize(Integer.parseInt(args[2])).setBatchSize(batch).setUbatchSize(batch).setParallel(1);
        int exit = 0;
        try (var model = new LlamaModel(params)) {
            WorkerProtocol.reply("loaded " + ResidentMemory.selfKb());
            WorkerProtocol.serve(new WorkerProtocol.Engine() {
                public int tokenCount(String text) { return model.encode(text).length; }
                public void run(int n, String prompt) throws Exception { LlamaCppWorker.run(model, n, prompt); }
            });
        } catch (Throwable t) {
            WorkerProtocol.reply("error " + t);
            exit = 1;
        }
        System.out.flush();
        System.exit(exit);
    }

    private static void run(LlamaModel model, int maxTokens, String prompt) {
        var params = new InferenceParameters(prompt).setTemperature(0).setNPredict(maxTokens).setIgnoreEos(true)
                .setCachePrompt(false);
        long start = System.nanoTime();
        long first = -1, last = -1;
        int outputs = 0;
        for (LlamaOutput ignored : model.generate(params)) {
            last = System.nanoTime() - start;
            if (first < 0) first = last;
            outputs++;
        }
        long wall = System.nanoTime() - start;
        WorkerProtocol.reply("done " + outputs + " " + first + " " + last + " " + wall);
    }

}
