package dev.forkpoint.bench.soak;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/** Every regular file under some folders (or a single file): size, modification time and SHA-256. */
record DiskSnapshot(Map<String, FileState> files) {
    record FileState(long size, long mtimeMillis, String sha256) {}

    /** Files added, removed and changed (size, time or content) from this snapshot to {@code after}. */
    record Diff(List<String> added, List<String> removed, List<String> changed) {
        boolean empty() { return added.isEmpty() && removed.isEmpty() && changed.isEmpty(); }

        @Override
        public String toString() {
            return empty() ? "no change" : "added " + added + ", removed " + removed + ", changed " + changed;
        }
    }

    static DiskSnapshot of(List<Path> roots) throws IOException {
        Map<String, FileState> files = new TreeMap<>();
        for (Path root : roots) {
            if (!Files.exists(root)) continue;
            if (Files.isRegularFile(root)) {
                files.put(root.toString(), state(root));
                continue;
            }
            try (Stream<Path> s = Files.walk(root)) {
                for (Path p : s.filter(Files::isRegularFile).toList()) files.put(p.toString(), state(p));
            }
        }
        return new DiskSnapshot(files);
    }

    static FileState state(Path p) throws IOException {
        return new FileState(Files.size(p), Files.getLastModifiedTime(p).toMillis(), sha256(p));
    }

    static String sha256(Path p) throws IOException {
        try (InputStream in = Files.newInputStream(p)) {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            byte[] buf = new byte[1 << 16];
            for (int n; (n = in.read(buf)) > 0; ) md.update(buf, 0, n);
            return HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    Diff diff(DiskSnapshot after) {
        List<String> added = new ArrayList<>(), removed = new ArrayList<>(), changed = new ArrayList<>();
        for (var e : after.files.entrySet()) {
            FileState before = files.get(e.getKey());
            if (before == null) added.add(e.getKey());
            else if (!before.equals(e.getValue())) changed.add(e.getKey());
        }
        for (String k : files.keySet()) if (!after.files.containsKey(k)) removed.add(k);
        return new Diff(added, removed, changed);
    }
}
