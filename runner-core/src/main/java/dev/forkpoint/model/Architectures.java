package dev.forkpoint.model;

import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.format.gguf.GgufFile;
import dev.forkpoint.tensor.GgmlType;

import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;

/** The architectures Forkpoint runs, by GGUF {@code general.architecture} name. */
public final class Architectures {
    private static final List<Architecture.Spec> ALL = List.of(new Llama(), new Qwen2(), new Qwen3(),
            new Qwen35(), new Qwen35Moe(), new Qwen3Next(), new Qwen3Moe());

    private Architectures() {}

    /** Every architecture, in registration order. */
    public static List<Architecture.Spec> all() { return ALL; }

    /** The architectures the converter reads and writes (those with a {@link Architecture.Spec#hfLayout()}). */
    public static List<Architecture.Spec> converted() {
        return ALL.stream().filter(s -> s.hfLayout().isPresent()).toList();
    }

    /** The spec whose GGUF name or Hugging Face model_type is {@code arch}, if any. */
    public static Optional<Architecture.Spec> find(String arch) {
        return ALL.stream().filter(s -> s.name().equals(arch) || s.hfModelType().equals(arch)).findFirst();
    }

    public static String supportedNames() {
        return ALL.stream().map(Architecture.Spec::name).collect(Collectors.joining(", "));
    }

    /**
     * The spec for the file's architecture, after checking everything that would otherwise fail later: the
     * architecture is known and every tensor has a type the kernels support.
     */
    public static Architecture.Spec forFile(GgufFile f) {
        Architecture.Spec spec = named(f.getString("general.architecture"), f.path(), "metadata general.architecture");
        f.tensors().stream().filter(t -> !t.type().supported()).findFirst().ifPresent(t -> {
            throw new ModelFormatException(f.path(), "tensor " + t.name(),
                    "type " + t.type() + " is not supported; supported tensor types: " + GgmlType.supportedNames());
        });
        return spec;
    }

    /** The spec named {@code arch} (GGUF architecture or Hugging Face model_type); {@code field} names where it was read. */
    static Architecture.Spec named(String arch, java.nio.file.Path file, String field) {
        return find(arch).orElseThrow(() ->
                new ModelFormatException(file, field, "architecture '" + arch + "' is not supported; supported architectures: " + supportedNames()));
    }
}
