package dev.forkpoint.bench;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.backend.KernelChoice;
import dev.forkpoint.engine.EngineOptions;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.sampling.SamplingOptions;

import java.io.IOException;
import java.nio.file.Path;

/**
 * Forkpoint, in this process: on the GGUF file, or (as a second row, {@value #HF_FOLDER}) on the Hugging Face folder
 * exported from it for Jlama. The second shares the process with the first, so its resident memory is not its own
 * and is reported as unknown.
 */
final class ForkpointEngine implements BenchEngine {
    static final String NAME = "forkpoint";
    static final String HF_FOLDER = "forkpoint (hf folder)";
    /** Forkpoint on the same file with {@code --kernels java} (beside the default, native where a C compiler built them). */
    static final String JAVA_KERNELS = "forkpoint-java";

    private final String name;
    private final LoadedModel model;
    private final long residentKb;
    private final int numCtx;
    private final int numBatch;

    private ForkpointEngine(String name, LoadedModel model, long residentKb, int numCtx, int numBatch) {
        this.name = name;
        this.model = model;
        this.residentKb = residentKb;
        this.numCtx = numCtx;
        this.numBatch = numBatch;
    }

    /** Forkpoint on the exported folder ({@value #HF_FOLDER}); load it after the GGUF row. */
    static ForkpointEngine loadFolder(Path folder, int threads, int numCtx, int numBatch) throws IOException {
        LoadedModel model = LoadedModel.load(folder, threads, LoadProgress.NONE, options(numCtx));
        return new ForkpointEngine(HF_FOLDER, model, -1, numCtx, numBatch);
    }

    /** Forkpoint on the GGUF file with the Java kernels ({@value #JAVA_KERNELS}); its memory is the first row's process. */
    static ForkpointEngine loadJavaKernels(Path gguf, int threads, int numCtx, int numBatch) throws IOException {
        LoadedModel model = LoadedModel.load(gguf, threads, LoadProgress.NONE, options(numCtx).withKernels(KernelChoice.JAVA));
        return new ForkpointEngine(JAVA_KERNELS, model, -1, numCtx, numBatch);
    }

    /** The engine's options for a run of {@code numCtx} positions: the KV budget derived from that context, as llama.cpp's is. */
    private static EngineOptions options(int numCtx) {
        return EngineOptions.defaults().withNumCtx(Math.max(numCtx, 1));
    }

    /** The kernels this row's CPU backend multiplies with ("java", "native avx512vnni", …). */
    String kernels() {
        return model.kernels();
    }

    static ForkpointEngine load(Path gguf, int threads, int numCtx, int numBatch) throws IOException {
        try {
            LoadedModel model = LoadedModel.load(gguf, threads, LoadProgress.NONE, options(numCtx));
            return new ForkpointEngine(NAME, model, ResidentMemory.selfKb(), numCtx, numBatch);
        } catch (UnsupportedOperationException e) {
            throw new InvalidInputException("Forkpoint cannot run " + gguf + " in this build: " + e.getMessage()
                    + " (--llamacpp-only measures llama.cpp alone)", e);
        }
    }

    @Override
    public String name() { return name; }

    @Override
    public int countTokens(String text) {
        return model.tokenizer().encode(text, false, false).length;
    }

    @Override
    public long residentKbAfterLoad() { return residentKb; }

    @Override
    public long residentKbNow() { return residentKb < 0 ? -1 : ResidentMemory.selfKb(); }

    @Override
    public EngineRun run(String prompt, int maxTokens) {
        var request = new GenerationRequest(prompt, SamplingOptions.greedy().withNumPredict(maxTokens), numCtx, numBatch);
        long start = System.nanoTime();
        GenerationResult r = model.generate(request, piece -> {});
        long wall = System.nanoTime() - start;
        return new EngineRun(r.promptTokens(), r.promptNanos(), r.generatedIds().length, r.generationNanos(), wall, "engine");
    }

    @Override
    public void close() {
        model.close();
    }
}
