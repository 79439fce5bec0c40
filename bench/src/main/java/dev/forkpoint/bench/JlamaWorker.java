package dev.forkpoint.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.model.functions.Generator;
import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.safetensors.SafeTensorSupport;
import com.github.tjake.jlama.safetensors.prompt.PromptContext;
import com.github.tjake.jlama.util.PhysicalCoreExecutor;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.UUID;

/**
 * The child process that runs Jlama (com.github.tjake:jlama-core) for {@link JlamaEngine}: Jlama's thread pool is
 * sized once per process, and its memory and log output stay apart from Forkpoint's. Arguments: FOLDER THREADS
 * WEIGHTS, where WEIGHTS is {@code as-is} (the folder's own floats) or a Jlama type ({@code Q4}): the
 * folder is then first quantised by Jlama's own quantiser ({@code SafeTensorSupport.quantizeModel}, what its
 * {@code quantize} command runs) into a sibling folder {@code FOLDER-jlama-q4} (reused by later workers), which is
 * loaded instead; Jlama's load-time quantisation ({@code loadModel}'s {@code modelQuantization}) fails in 0.8.4 on
 * such a folder (an F32 × Q4 dot product in attention). Commands on stdin, one per line: {@code tokenize TEXT}, {@code run MAX_TOKENS TEXT},
 * {@code rss}, {@code quit}. Replies on stdout start with {@link WorkerProtocol#REPLY}; Jlama logs to stderr.
 *
 * <p>{@code run} calls Jlama's own {@code generate} (greedy: temperature 0, a fresh session so nothing is reused)
 * and times it from outside with {@link System#nanoTime()}: prompt time is from the call to the first streamed token
 * (Jlama's batched prefill plus the first greedy pick), decode time from there to the return, the same split
 * Forkpoint's own accounting uses. Jlama's own figures are whole milliseconds, too coarse for a small model; they are
 * passed on too. The reply {@code done P N PROMPT_NS DECODE_NS WALL_NS PROMPT_MS GEN_MS REASON} is preceded by
 * {@code pieces JSON}, the text of each streamed token.
 */
public final class JlamaWorker {
    static final String AS_IS = "as-is";

    private JlamaWorker() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: JlamaWorker FOLDER THREADS as-is|Q4");
            System.exit(2);
        }
        int threads = Integer.parseInt(args[1]);
        Optional<DType> weights = args[2].equals(AS_IS) ? Optional.empty() : Optional.of(DType.valueOf(args[2]));
        // Activations stay F32 for float weights; Jlama's quantised matmuls take I8 activations (its own default).
        DType workingQuantised = weights.isPresent() ? DType.I8 : DType.F32;
        int exit = 0;
        AbstractModel model = null;
        try {
            PhysicalCoreExecutor.overrideThreadCount(threads);   // before anything (the quantiser too) starts Jlama's pool
            File folder = weights.isPresent() ? quantised(Path.of(args[0]), weights.get()).toFile() : new File(args[0]);
            model = ModelSupport.loadModel(folder, null, DType.F32, workingQuantised, Optional.empty(), Optional.empty());
            WorkerProtocol.reply("loaded " + ResidentMemory.selfKb());
            AbstractModel loaded = model;
            WorkerProtocol.serve(new WorkerProtocol.Engine() {
                public int tokenCount(String text) { return withoutBos(loaded, loaded.getTokenizer().encode(text)); }
                public void run(int n, String prompt) throws Exception { JlamaWorker.run(loaded, n, prompt); }
            });
        } catch (Throwable t) {
            t.printStackTrace();   // into the log the parent keeps for its error message
            WorkerProtocol.reply("error " + t);
            exit = 1;
        } finally {
            if (model != null) model.close();
        }
        System.out.flush();
        System.exit(exit);
    }

    /** {@code folder} quantised by Jlama to {@code type}, written next to it on first use. */
    private static Path quantised(Path folder, DType type) throws IOException {
        Path out = folder.resolveSibling(folder.getFileName() + "-jlama-" + type.name().toLowerCase(Locale.ROOT));
        if (Files.isRegularFile(out.resolve("model.safetensors"))) return out;
        Path readme = folder.resolve("README.md");   // Jlama's quantiser copies it along with the config and tokenizer
        if (!Files.exists(readme)) Files.writeString(readme, "Exported by forkpoint bench compare for Jlama.\n");
        return SafeTensorSupport.quantizeModel(folder, type, new String[0], new String[0], Optional.of(out));
    }

    /** Tokens of an encoding, not counting a leading BOS (Jlama's generate adds its own). */
    private static int withoutBos(AbstractModel model, long[] ids) {
        return ids.length > 0 && ids[0] == model.getConfig().bosToken ? ids.length - 1 : ids.length;
    }

    private static void run(AbstractModel model, int maxTokens, String prompt) throws Exception {
        int promptTokens = withoutBos(model, model.getTokenizer().encode(prompt)) + 1;   // Jlama always puts BOS first
        List<String> pieces = new ArrayList<>();
        long[] first = {-1};
        long start = System.nanoTime();
        // Jlama's ntokens is the last position: the prompt's tokens, then one token from the prefill and one per step.
        Generator.Response r = model.generate(UUID.randomUUID(), PromptContext.of(prompt), 0f, promptTokens + maxTokens - 1,
                (piece, msPerToken) -> {
                    if (first[0] < 0) first[0] = System.nanoTime() - start;
                    pieces.add(piece);
                });
        long wall = System.nanoTime() - start;
        // Jlama counts decode steps; the first token (picked from the prefill) is one more, unless a step picked EOS.
        int generated = r.generatedTokens + (r.finishReason == Generator.FinishReason.STOP_TOKEN ? 0 : 1);
        long firstNanos = first[0] < 0 ? wall : first[0];
        WorkerProtocol.reply("pieces " + new ObjectMapper().writeValueAsString(pieces));
        WorkerProtocol.reply("done " + promptTokens + " " + generated + " " + firstNanos + " " + (wall - firstNanos) + " " + wall + " "
                + r.promptTimeMs + " " + r.generateTimeMs + " " + r.finishReason);
    }

}
