package dev.forkpoint.format.safetensors;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.fuzz.FuzzInvariant;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;

import static dev.forkpoint.fuzz.FuzzInvariant.check;

/**
 * Fuzzed safetensors bytes through the reader, and fuzzed {@code model.safetensors.index.json} files over a folder of
 * two valid shards through {@link SafetensorsShards}: each opens with tensors inside their data, or fails with a
 * {@link ModelFormatException}.
 */
class SafetensorsFuzzTest {
    static final Path NAME = Path.of("fuzzed.safetensors");
    static final Path FOLDER;

    static {
        try {
            FOLDER = Files.createTempDirectory("forkpoint-fuzz-shards-");
            FOLDER.toFile().deleteOnExit();
            try (Arena arena = Arena.ofConfined()) {
                new SafetensorsWriter().metadata("format", "mlx")
                        .tensor("a", SafetensorsDtype.byName("F32"), new long[]{2, 2}, arena.allocate(16))
                        .tensor("b", SafetensorsDtype.byName("BF16"), new long[]{3}, arena.allocate(6))
                        .write(FOLDER.resolve("model-00001-of-00002.safetensors"));
                new SafetensorsWriter()
                        .tensor("c", SafetensorsDtype.byName("F16"), new long[]{1, 4}, arena.allocate(8))
                        .write(FOLDER.resolve("model-00002-of-00002.safetensors"));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @FuzzTest
    void parse(byte[] bytes) throws Exception {
        var error = FuzzInvariant.typedErrorOrValid(() -> {
            SafetensorsFile f = SafetensorsFile.parse(NAME, MemorySegment.ofArray(bytes), null);
            for (SafetensorsTensor t : f.tensors()) {
                check(t.data().byteSize() <= bytes.length, "tensor " + t.name() + " is larger than the file");
                FuzzInvariant.typedErrorOrValid(() -> SafetensorsFile.requireReadable(t));
            }
            f.metadata().forEach((k, v) -> check(k != null && v != null, "null metadata"));
        });
        if (error != null) check(error instanceof ModelFormatException, "not a ModelFormatException: " + error);
    }

    @FuzzTest
    void shardIndex(byte[] indexJson) throws Exception {
        Files.write(FOLDER.resolve(SafetensorsShards.INDEX), indexJson);
        var error = FuzzInvariant.typedErrorOrValid(() -> {
            try (SafetensorsShards shards = SafetensorsShards.open(FOLDER)) {
                for (SafetensorsTensor t : shards.tensors()) {
                    check(t.file().normalize().startsWith(FOLDER.normalize()), "tensor " + t.name() + " read from outside the folder: " + t.file());
                }
                check(shards.dataBytes() >= 0, "negative data size");
            }
        });
        if (error != null) check(error instanceof ModelFormatException, "not a ModelFormatException: " + error);
    }
}
