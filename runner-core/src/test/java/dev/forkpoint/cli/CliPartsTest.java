package dev.forkpoint.cli;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.format.ModelFormatException;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The small pieces of the CLI: failure reporting, the progress bar, piece escaping, counts. */
class CliPartsTest {
    private record Reported(int code, String err) {}

    private static Reported report(Throwable t, boolean debug) {
        var bytes = new ByteArrayOutputStream();
        int code = ExitCodes.report(t, new PrintStream(bytes, true, StandardCharsets.UTF_8), debug);
        return new Reported(code, bytes.toString(StandardCharsets.UTF_8));
    }

    @Test
    void failuresMapToExitCodes() {
        Function<Throwable, Integer> code = t -> report(t, false).code();
        assertEquals(2, code.apply(new InvalidInputException("bad")));
        assertEquals(2, code.apply(new ModelFormatException(Path.of("m.gguf"), "magic", 0, "not a GGUF file")));
        assertEquals(2, code.apply(new NoSuchFileException("/x")));
        assertEquals(2, code.apply(new AccessDeniedException("/x")));
        assertEquals(2, code.apply(new UncheckedIOException(new NoSuchFileException("/x"))));
        assertEquals(1, code.apply(new IOException("disk on fire")));
        assertEquals(1, code.apply(new IllegalStateException("bug")));
        assertEquals(1, code.apply(new OutOfMemoryError("Java heap space")));
    }

    @Test
    void messagesAreOneLineUnlessDebugging() {
        var plain = report(new ModelFormatException(Path.of("m.gguf"), "magic", 0, "not a GGUF file"), false);
        assertEquals("forkpoint: error: m.gguf: magic at offset 0: not a GGUF file\n", plain.err());
        var internal = report(new IllegalStateException("bug"), false);
        assertTrue(internal.err().startsWith("forkpoint: error: internal error: java.lang.IllegalStateException: bug\n"), internal.err());
        assertTrue(internal.err().contains("--debug"));
        assertFalse(internal.err().contains("\tat "));
        var debug = report(new IllegalStateException("bug"), true);
        assertTrue(debug.err().contains("\tat dev.forkpoint.cli.CliPartsTest"), debug.err());
        assertEquals("forkpoint: error: no such file: /x\n", report(new NoSuchFileException("/x"), false).err());
    }

    @Test
    void progressBarDrawsOnlyOnATerminalAndErasesItself() {
        var bytes = new ByteArrayOutputStream();
        try (var bar = new LoadBar(new PrintStream(bytes, true, StandardCharsets.UTF_8), true)) {
            for (int i = 0; i <= 10; i++) bar.update(i, 10);
        }
        String drawn = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(drawn.startsWith("\rloading model ["), drawn);
        assertTrue(drawn.contains("] 10/10 tensors"), drawn);
        assertTrue(drawn.endsWith("\r") && !drawn.contains("\n"), "erased in place, no new line");

        var silent = new ByteArrayOutputStream();
        try (var bar = new LoadBar(new PrintStream(silent, true, StandardCharsets.UTF_8), false)) {
            bar.update(5, 10);
        }
        assertEquals(0, silent.size());
    }

    @Test
    void piecesAreEscapedToStayOnTheirLine() {
        assertEquals("\\n", TokenizeCommand.escape("\n"));
        assertEquals("a\\tb\\\\", TokenizeCommand.escape("a\tb\\"));
        assertEquals("\\u001b[", TokenizeCommand.escape("\u001b["));
        assertEquals("▁Once Ġthe é", TokenizeCommand.escape("▁Once Ġthe é"));
    }

    @Test
    void countsAreAbbreviated() {
        assertEquals("999", ShowCommand.humanCount(999));
        assertEquals("260.1K", ShowCommand.humanCount(260_096));
        assertEquals("7.2M", ShowCommand.humanCount(7_200_000));
        assertEquals("1.24B", ShowCommand.humanCount(1_235_814_400L));
    }
}
