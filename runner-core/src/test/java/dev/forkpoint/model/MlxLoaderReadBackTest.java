package dev.forkpoint.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.forkpoint.TestData;
import dev.forkpoint.backend.Backend;
import dev.forkpoint.backend.KvStore;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.backend.cpu.CpuBackend;
import dev.forkpoint.convert.MlxOptions;
import dev.forkpoint.convert.ModelConverter;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.format.gguf.GgufTensor;
import dev.forkpoint.format.safetensors.SafetensorsShards;
import dev.forkpoint.format.safetensors.SafetensorsTensor;
import dev.forkpoint.kvcache.SequenceKv;
import dev.forkpoint.reference.HfNaming;
import dev.forkpoint.tensor.AffineTensor;
import dev.forkpoint.tensor.GgmlTensor;
import dev.forkpoint.tensor.WeightSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.*;

/**
 * What the loader hands the backend for an MLX folder is exactly what the converter wrote: for every quantised module
 * the same code, scale and bias bytes, the bits and group size config.json gives it, and the source matrix's rows and
 * columns; for every plain tensor the same bytes. Checked at 8 bits / group 64 and 4 bits / group 32.
 */
class MlxLoaderReadBackTest {
    @TempDir Path dir;

    /** A CPU backend that records the tensors it is given. */
    private static final class Recording implements Backend {
        final CpuBackend cpu = new CpuBackend(1);
        final Map<String, AffineTensor> affine = new HashMap<>();
        final Map<String, GgmlTensor> plain = new HashMap<>();

        public String name() { return "recording"; }
        public Weight weight(WeightSource s) {
            switch (s) {
                case GgmlTensor t -> plain.put(t.name(), t);
                case AffineTensor t -> affine.put(t.name(), t);
                default -> { }
            }
            return cpu.weight(s);
        }
        public KvStore newKvStore(SequenceKv s, dev.forkpoint.backend.RecurrentLayout r) { return cpu.newKvStore(s, r); }
        public Ops ops() { return cpu.ops(); }
        public void close() { cpu.close(); }
    }

    @Test
    void loaderHandsTheBackendTheConvertersBytes() throws IOException {
        Path source = TestData.shared("models/stories260K.gguf");
        for (int[] bg : new int[][]{{8, 64}, {4, 32}}) {
            Path folder = dir.resolve("q" + bg[0] + "g" + bg[1]);
            ModelConverter.toMlx(source, folder, MlxOptions.defaults().withFormat(bg[0], bg[1]), (a, b) -> {});
            JsonNode quantization = new ObjectMapper().readTree(folder.resolve("config.json").toFile()).get("quantization");
            try (GgufFile gguf = GgufFile.open(source);
                 ModelFiles files = ModelFiles.open(folder);
                 SafetensorsShards written = SafetensorsShards.open(folder);
                 Recording backend = new Recording()) {
                files.load(backend, n -> {});
                int quantised = 0;
                for (GgufTensor src : gguf.tensors()) {
                    String hf = HfNaming.hf(src.name());
                    String module = hf.substring(0, hf.lastIndexOf('.'));
                    AffineTensor a = backend.affine.get(src.name());
                    if (a != null) {
                        quantised++;
                        assertEquals(src.rows(), a.rows(), src.name());
                        assertEquals(src.rowLength(), a.cols(), src.name());
                        assertEquals(bg[0], a.format().bits(), src.name());
                        assertEquals(bg[1], a.format().groupSize(), src.name());
                        assertEquals(quantization.get("bits").asInt(), a.format().bits());
                        assertEquals(-1, a.packed().mismatch(written.tensor(hf).data()), src.name() + " codes");
                        assertEquals(-1, a.scales().mismatch(written.tensor(module + ".scales").data()), src.name() + " scales");
                        assertEquals(-1, a.biases().mismatch(written.tensor(module + ".biases").data()), src.name() + " biases");
                    } else {
                        GgmlTensor p = backend.plain.get(src.name());
                        assertNotNull(p, src.name() + " was not loaded");
                        assertArrayEquals(src.shape(), p.shape(), src.name());
                        SafetensorsTensor w = written.tensor(hf);
                        assertEquals(-1, p.data().mismatch(w.data()), src.name() + " bytes");
                        if (src.shape().length == 2 && src.rowLength() % bg[1] == 0) {
                            fail(src.name() + " divides into groups of " + bg[1] + " but was not quantised");
                        }
                    }
                }
                assertTrue(quantised > 10, "quantised modules: " + quantised);
            }
        }
    }
}
