package dev.forkpoint.tokenizer;

import dev.forkpoint.TestData;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** llama.cpp's tokenizer test vectors: {@code <vocab>.inp} texts and {@code <vocab>.out} expected ids. */
record VocabTestCases(List<Case> cases) {
    static final String SEPARATOR = "\n__ggml_vocab_test__\n";

    record Case(String text, int[] ids) {}

    /** Reads {@code tokenizers/llamacpp/<name>.inp/.out} (skips the test when absent). */
    static VocabTestCases load(String name) throws IOException {
        Path inp = TestData.shared("tokenizers/llamacpp/" + name + ".inp");
        Path out = TestData.shared("tokenizers/llamacpp/" + name + ".out");
        String all = Files.readString(inp, StandardCharsets.UTF_8);
        List<String> texts = new ArrayList<>(Arrays.asList(all.split(SEPARATOR, -1)));
        if (all.endsWith(SEPARATOR)) texts.removeLast();
        List<String> lines = Files.readAllLines(out, StandardCharsets.UTF_8);
        if (lines.size() != texts.size()) {
            throw new IllegalStateException(name + ": " + texts.size() + " inputs but " + lines.size() + " outputs");
        }
        List<Case> cases = new ArrayList<>();
        for (int i = 0; i < texts.size(); i++) {
            String line = lines.get(i).trim();
            int[] ids = line.isEmpty() ? new int[0] : Arrays.stream(line.split(" +")).mapToInt(Integer::parseInt).toArray();
            cases.add(new Case(texts.get(i), ids));
        }
        return new VocabTestCases(cases);
    }
}
