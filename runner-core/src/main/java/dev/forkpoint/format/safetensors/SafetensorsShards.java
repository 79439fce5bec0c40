package dev.forkpoint.format.safetensors;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.format.JsonFile;
import dev.forkpoint.format.ModelFormatException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * The safetensors files of one model folder, seen as one set of tensors: {@code model.safetensors}, or the shards
 * that {@code model.safetensors.index.json} lists in its {@code weight_map} (every shard must exist, every mapped
 * tensor must be in the shard the index names), or else every {@code *.safetensors} file of the folder. A tensor name
 * may appear once across all shards.
 */
public final class SafetensorsShards implements AutoCloseable {
    public static final String SINGLE = "model.safetensors";
    public static final String INDEX = "model.safetensors.index.json";

    private final Path folder;
    private final List<SafetensorsFile> files;
    private final Map<String, SafetensorsTensor> tensors;

    private SafetensorsShards(Path folder, List<SafetensorsFile> files, Map<String, SafetensorsTensor> tensors) {
        this.folder = folder;
        this.files = files;
        this.tensors = tensors;
    }

    /** True when {@code folder} holds safetensors weights in one of the layouts above. */
    public static boolean present(Path folder) {
        if (Files.isRegularFile(folder.resolve(INDEX)) || Files.isRegularFile(folder.resolve(SINGLE))) return true;
        try (Stream<Path> s = Files.list(folder)) {
            return s.anyMatch(p -> p.getFileName().toString().endsWith(".safetensors"));
        } catch (IOException e) {
            return false;
        }
    }

    public static SafetensorsShards open(Path folder) throws IOException {
        List<Path> paths = new ArrayList<>();
        Map<String, String> weightMap = null;
        Path index = folder.resolve(INDEX);
        if (Files.isRegularFile(index)) {
            weightMap = readWeightMap(index);
            for (String shard : new java.util.TreeSet<>(weightMap.values())) {
                Path p = folder.resolve(shard).normalize();
                if (!p.startsWith(folder.normalize())) throw new ModelFormatException(index, "weight_map", "shard \"" + shard + "\" lies outside the folder");
                if (!Files.isRegularFile(p)) {
                    String example = weightMap.entrySet().stream().filter(e -> e.getValue().equals(shard)).findFirst().orElseThrow().getKey();
                    throw new ModelFormatException(index, "weight_map", "shard " + p + " is missing (it holds tensor " + example + ")");
                }
                paths.add(p);
            }
        } else if (Files.isRegularFile(folder.resolve(SINGLE))) {
            paths.add(folder.resolve(SINGLE));
        } else {
            try (Stream<Path> s = Files.list(folder)) {
                s.filter(p -> p.getFileName().toString().endsWith(".safetensors")).sorted().forEach(paths::add);
            }
            if (paths.isEmpty()) throw new ModelFormatException(folder, "weights", "no " + SINGLE + ", " + INDEX + " or *.safetensors file in the folder");
        }
        List<SafetensorsFile> files = new ArrayList<>();
        try {
            Map<String, SafetensorsTensor> tensors = new LinkedHashMap<>();
            for (Path p : paths) {
                SafetensorsFile f = SafetensorsFile.open(p);
                files.add(f);
                for (SafetensorsTensor t : f.tensors()) {
                    SafetensorsTensor before = tensors.putIfAbsent(t.name(), t);
                    if (before != null) throw new ModelFormatException(p, "tensor " + t.name(), "also present in " + before.file());
                }
            }
            if (weightMap != null) {
                for (var e : weightMap.entrySet()) {
                    SafetensorsTensor t = tensors.get(e.getKey());
                    Path expected = folder.resolve(e.getValue()).normalize();
                    if (t == null || !t.file().normalize().equals(expected)) {
                        throw new ModelFormatException(expected, "tensor " + e.getKey(), "missing (" + INDEX + " maps it to this shard)");
                    }
                }
            }
            return new SafetensorsShards(folder, List.copyOf(files), tensors);
        } catch (IOException | RuntimeException | Error e) {
            files.forEach(SafetensorsFile::close);
            throw e;
        }
    }

    private static Map<String, String> readWeightMap(Path index) throws IOException {
        JsonNode root = JsonFile.read(index, "index");
        JsonNode map = root == null ? null : root.get("weight_map");
        if (map == null || !map.isObject()) throw new ModelFormatException(index, "weight_map", "missing or not an object");
        Map<String, String> out = new TreeMap<>();
        for (var e : map.properties()) {
            if (!e.getValue().isTextual() || e.getValue().asText().isEmpty()) {
                throw new ModelFormatException(index, "weight_map." + e.getKey(), "must be a shard file name, found " + e.getValue());
            }
            out.put(e.getKey(), e.getValue().asText());
        }
        return out;
    }

    public Path folder() { return folder; }

    public List<SafetensorsFile> files() { return files; }

    public Collection<SafetensorsTensor> tensors() { return tensors.values(); }

    public Optional<SafetensorsTensor> find(String name) { return Optional.ofNullable(tensors.get(name)); }

    public SafetensorsTensor tensor(String name) {
        SafetensorsTensor t = tensors.get(name);
        if (t == null) throw new ModelFormatException(folder, "tensor " + name, "missing from the folder's safetensors files");
        return t;
    }

    /** The folder's total size of tensor data in bytes. */
    public long dataBytes() {
        long n = 0;
        for (SafetensorsTensor t : tensors.values()) n += t.data().byteSize();
        return n;
    }

    @Override
    public void close() {
        files.forEach(SafetensorsFile::close);
    }
}
