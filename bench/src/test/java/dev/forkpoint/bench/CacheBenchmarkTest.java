package dev.forkpoint.bench;

import dev.forkpoint.engine.EngineOptions;
import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.tokenizer.Tokenizer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * `bench cache` at small size: the evaluated and reused token counts of the three cases are what the prompts' tokens
 * say a token-exact prefix cache must give (computed here from the tokenizer: the longest common prefix with any
 * earlier prompt, at most all but the last token), on the generated long-context model (byte-level, one token per
 * character) and on stories260K (SentencePiece).
 */
class CacheBenchmarkTest {

    @Test
    void generatedLongContextModel(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("long-context.gguf");
        new SyntheticModelWriter(ModelShape.LONG_CONTEXT, FileType.F16, 42, false, 2).write(file);
        List<CacheBenchmark.Case> cases = check(file, 2000);
        // one token per character here: the changed last character is the one token evaluated
        assertEquals(1, cases.get(1).evaluated());
    }

    @Test
    void stories260K() throws Exception {
        check(BenchTestData.shared("models/stories260K.gguf"), 500);
    }

    private static List<CacheBenchmark.Case> check(Path file, int tokens) throws Exception {
        int numCtx = (tokens + 16 + 255) / 256 * 256;
        try (LoadedModel model = LoadedModel.load(file, 1, LoadProgress.NONE, EngineOptions.defaults().withSequences(4))) {
            Tokenizer tok = model.tokenizer();
            CacheBenchmark.Prompts prompts = CacheBenchmark.prompts(tok, tokens);
            List<int[]> ids = prompts.inOrder().stream().map(p -> tok.encode(p, true, true)).toList();
            assertTrue(Math.abs(ids.get(0).length - tokens) <= tokens / 200, () -> ids.get(0).length + " tokens, asked for " + tokens);

            List<CacheBenchmark.Case> cases = CacheBenchmark.run(model, prompts, numCtx, 512, 300);
            assertEquals(3, cases.size());
            for (int k = 0; k < 3; k++) {
                int[] t = ids.get(k);
                int common = 0;
                for (int j = 0; j < k; j++) common = Math.max(common, commonPrefix(ids.get(j), t));
                int reused = Math.min(common, t.length - 1);
                CacheBenchmark.Case c = cases.get(k);
                assertEquals(t.length, c.promptTokens(), c.name());
                assertEquals(reused, c.reused(), c.name());
                assertEquals(t.length - reused, c.evaluated(), c.name());
            }
            // the session id sits near the start: almost everything after it is evaluated again
            assertTrue(cases.get(2).evaluated() > tokens * 9 / 10, cases.get(2).toString());
            return cases;
        }
    }

    private static int commonPrefix(int[] a, int[] b) {
        int n = 0;
        while (n < a.length && n < b.length && a[n] == b[n]) n++;
        return n;
    }
}
