package dev.forkpoint.bench;

import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufTensor;
import dev.forkpoint.format.gguf.GgufWriter;
import dev.forkpoint.tensor.GgmlType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

class SyntheticModelWriterTest {
    private static final ValueLayout.OfShort F16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @TempDir
    Path dir;

    private Path generate(String name, String... extra) {
        Path out = dir.resolve(name);
        var args = new java.util.ArrayList<>(List.of("generate", "--shape", "tiny", "--type", "f16", "--out", out.toString()));
        args.addAll(List.of(extra));
        assertEquals(0, BenchMain.commandLine().execute(args.toArray(String[]::new)));
        return out;
    }

    @Test
    void tinyF16IsAValidLlamaGgufWithTheExpectedTensors() throws Exception {
        Path file = generate("tiny.gguf");
        ModelShape s = ModelShape.TINY;
        try (GgufFile gguf = GgufFile.open(file)) {
            assertEquals(3, gguf.version());
            assertEquals(2 + 9 * s.layers(), gguf.tensors().size());
            assertEquals("llama", gguf.getString("general.architecture"));
            assertEquals(s.dim(), gguf.getInt("llama.embedding_length"));
            assertEquals(s.layers(), gguf.getInt("llama.block_count"));
            assertEquals(s.headCount(), gguf.getInt("llama.attention.head_count"));
            assertEquals(s.kvHeadCount(), gguf.getInt("llama.attention.head_count_kv"));
            assertEquals(s.ffnDim(), gguf.getInt("llama.feed_forward_length"));
            assertEquals(s.contextLength(), gguf.getInt("llama.context_length"));
            assertEquals("gpt2", gguf.getString("tokenizer.ggml.model"));
            assertEquals("llama-bpe", gguf.getString("tokenizer.ggml.pre"));
            assertEquals(0, gguf.getArray("tokenizer.ggml.merges").values().size());
            String[] tokens = gguf.getStringArray("tokenizer.ggml.tokens");
            assertEquals(s.vocabSize(), tokens.length);
            assertEquals("<|begin_of_text|>", tokens[gguf.getInt("tokenizer.ggml.bos_token_id")]);
            assertEquals("<|end_of_text|>", tokens[gguf.getInt("tokenizer.ggml.eos_token_id")]);
            assertTrue(gguf.findTensor("output.weight").isEmpty(), "embeddings are tied");

            assertTensor(gguf, "token_embd.weight", GgmlType.F16, s.dim(), s.vocabSize());
            assertTensor(gguf, "output_norm.weight", GgmlType.F32, s.dim());
            for (int l = 0; l < s.layers(); l++) {
                String p = "blk." + l + ".";
                assertTensor(gguf, p + "attn_norm.weight", GgmlType.F32, s.dim());
                assertTensor(gguf, p + "attn_q.weight", GgmlType.F16, s.dim(), s.dim());
                assertTensor(gguf, p + "attn_k.weight", GgmlType.F16, s.dim(), s.kvDim());
                assertTensor(gguf, p + "attn_v.weight", GgmlType.F16, s.dim(), s.kvDim());
                assertTensor(gguf, p + "attn_output.weight", GgmlType.F16, s.dim(), s.dim());
                assertTensor(gguf, p + "ffn_norm.weight", GgmlType.F32, s.dim());
                assertTensor(gguf, p + "ffn_gate.weight", GgmlType.F16, s.dim(), s.ffnDim());
                assertTensor(gguf, p + "ffn_up.weight", GgmlType.F16, s.dim(), s.ffnDim());
                assertTensor(gguf, p + "ffn_down.weight", GgmlType.F16, s.ffnDim(), s.dim());
            }
        }
    }

    private static void assertTensor(GgufFile gguf, String name, GgmlType type, long... shape) {
        GgufTensor t = gguf.tensor(name);
        assertEquals(type, t.type(), name);
        assertArrayEquals(shape, t.shape(), name);
    }

    @Test
    void weightsHaveTheRequestedDistribution() throws Exception {
        Path file = generate("tiny.gguf");
        try (GgufFile gguf = GgufFile.open(file)) {
            GgufTensor up = gguf.tensor("blk.0.ffn_up.weight");
            double sum = 0, sq = 0;
            long n = up.elementCount();
            for (long i = 0; i < n; i++) {
                double v = Float.float16ToFloat(up.data().getAtIndex(F16, i));
                sum += v;
                sq += v * v;
            }
            double mean = sum / n, std = Math.sqrt(sq / n - mean * mean);
            assertEquals(0, mean, 3e-4);
            assertEquals(SyntheticModelWriter.WEIGHT_STD, std, SyntheticModelWriter.WEIGHT_STD * 0.01);

            GgufTensor norm = gguf.tensor("blk.1.attn_norm.weight");
            double normSum = 0;
            for (long i = 0; i < norm.elementCount(); i++) normSum += norm.data().getAtIndex(F32, i);
            assertEquals(1, normSum / norm.elementCount(), 0.01);

            // Control-token rows of the tied embedding are scaled down so greedy decoding never picks them.
            GgufTensor embd = gguf.tensor("token_embd.weight");
            int dim = ModelShape.TINY.dim();
            assertTrue(rowRms(embd, ModelShape.TINY.eosId(), dim) < rowRms(embd, 'a', dim) / 16);
        }
    }

    private static double rowRms(GgufTensor t, int row, int dim) {
        double sq = 0;
        for (int i = 0; i < dim; i++) {
            double v = Float.float16ToFloat(t.data().getAtIndex(F16, (long) row * dim + i));
            sq += v * v;
        }
        return Math.sqrt(sq / dim);
    }

    @Test
    void outputDependsOnlyOnTheSeed() throws Exception {
        String a = sha256(generate("a.gguf", "--seed", "7", "--threads", "1"));
        String b = sha256(generate("b.gguf", "--seed", "7", "--threads", "3"));
        String c = sha256(generate("c.gguf", "--seed", "8"));
        assertEquals(a, b, "same seed, different thread counts");
        assertNotEquals(a, c, "different seeds");
    }

    @Test
    void streamedFileIsByteIdenticalToGgufWriterOutput() throws Exception {
        var writer = new SyntheticModelWriter(ModelShape.TINY, FileType.F16, 42, true, 2);
        Path streamed = writer.write(dir.resolve("streamed.gguf")).path();
        Path reference = dir.resolve("reference.gguf");
        try (GgufFile gguf = GgufFile.open(streamed)) {
            var ref = new GgufWriter().putAll(writer.metadata());
            for (TensorPlan p : writer.plans()) {
                ref.add(new GgufWriter.TensorData(p.name(), p.type(), p.shape(), gguf.tensor(p.name()).data()));
            }
            ref.write(reference);
        }
        assertEquals(sha256(reference), sha256(streamed));
    }

    private static String sha256(Path p) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p)));
    }
}
