package dev.forkpoint.engine;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.cpu.CpuBackend;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufTensor;
import dev.forkpoint.model.Architecture;
import dev.forkpoint.model.Architectures;
import dev.forkpoint.model.ModelConfig;
import dev.forkpoint.tokenizer.Tokenizer;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;

/**
 * A model file loaded onto a backend, ready to generate: the file (mapped), its tokenizer, its architecture's
 * graph over the prepared weights. One generation at a time (calls are serialised).
 */
public final class LoadedModel implements AutoCloseable {
    private final GgufFile file;
    private final CpuBackend backend;
    private final Architecture architecture;
    private final Tokenizer tokenizer;

    private LoadedModel(GgufFile file, CpuBackend backend, Architecture architecture, Tokenizer tokenizer) {
        this.file = file;
        this.backend = backend;
        this.architecture = architecture;
        this.tokenizer = tokenizer;
    }

    /** Loads a GGUF file on the CPU backend with {@code threads} threads; refuses unsupported architectures and tensor types. */
    public static LoadedModel load(Path gguf, int threads, LoadProgress progress) throws IOException {
        if (threads < 1) throw new dev.forkpoint.InvalidInputException("threads must be at least 1, got " + threads);
        GgufFile file = GgufFile.open(gguf);
        CpuBackend backend = null;
        try {
            Architecture.Spec spec = Architectures.forFile(file);
            Tokenizer tokenizer = Tokenizer.fromGguf(file);
            backend = new CpuBackend(threads);
            int total = file.tensors().size();
            Architecture arch = spec.load(file, backend, done -> progress.update(done, total));
            progress.update(total, total);
            return new LoadedModel(file, backend, arch, tokenizer);
        } catch (RuntimeException | Error e) {
            if (backend != null) backend.close();
            file.close();
            throw e;
        }
    }

    public ModelConfig config() { return architecture.config(); }

    public Tokenizer tokenizer() { return tokenizer; }

    public int threads() { return backend.threads(); }

    public ModelInfo info() throws IOException {
        ModelConfig c = architecture.config();
        long params = 0;
        Map<String, Integer> types = new TreeMap<>();
        for (GgufTensor t : file.tensors()) {
            params += t.elementCount();
            types.merge(t.type().name(), 1, Integer::sum);
        }
        return new ModelInfo(file.path().toString(), c.architecture(), file.getString("general.name", ""), params, types,
                c.contextLength(), c.dim(), c.layers(), c.heads(), c.kvHeads(), tokenizer.model(), tokenizer.vocabSize(),
                file.getString("tokenizer.chat_template", null), sha256(file.path()));
    }

    /** Runs a completion, streaming text to {@code sink}. */
    public synchronized GenerationResult generate(GenerationRequest request, TokenSink sink) {
        return new Generation(this, request, sink).run();
    }

    /** The logits after evaluating {@code tokens} from position 0 (a fresh sequence), for the last token. */
    public synchronized float[] logits(int[] tokens) {
        if (tokens.length == 0) throw new dev.forkpoint.InvalidInputException("no tokens to evaluate");
        KvStore kv = newKvStore(tokens.length);
        return prefill(tokens, kv, GenerationRequest.DEFAULT_NUM_BATCH);
    }

    KvStore newKvStore(int capacity) {
        ModelConfig c = architecture.config();
        return backend.newKvStore(c.layers(), c.kvDim(), capacity);
    }

    /** Evaluates tokens after what kv holds, in chunks of numBatch, and returns the logits of the last one. */
    float[] prefill(int[] tokens, KvStore kv, int numBatch) {
        Ops ops = backend.ops();
        float[] logits = null;
        for (int start = 0; start < tokens.length; start += numBatch) {
            int n = Math.min(numBatch, tokens.length - start);
            int[] chunk = java.util.Arrays.copyOfRange(tokens, start, start + n);
            int pos = kv.length();
            Activation hidden = architecture.forward(ops, chunk, pos, kv);
            kv.setLength(pos + n);
            if (start + n == tokens.length) logits = ops.logits(ops.row(hidden, n - 1), architecture.output())[0];
        }
        return logits;
    }

    /** Evaluates one token at the end of kv and returns its logits. */
    float[] step(int token, KvStore kv) {
        Ops ops = backend.ops();
        int pos = kv.length();
        Activation hidden = architecture.forward(ops, new int[] {token}, pos, kv);
        kv.setLength(pos + 1);
        return ops.logits(hidden, architecture.output())[0];
    }

    private static String sha256(Path path) throws IOException {
        try (InputStream in = Files.newInputStream(path)) {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            byte[] buf = new byte[1 << 20];
            int n;
            while ((n = in.read(buf)) > 0) md.update(buf, 0, n);
            return HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        backend.close();
        file.close();
    }
}
