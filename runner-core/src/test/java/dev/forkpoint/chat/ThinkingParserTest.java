package dev.forkpoint.chat;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The incremental thinking parser: every output is fed whole, cut at every position into two pieces, as single
 * characters and in random cuts, and must divide the same way each time (so a tag split across tokens, at any byte
 * of it, is found); the divisions themselves follow Qwen3's conventions.
 */
class ThinkingParserTest {

    /** The division of {@code output} by a parser fed {@code pieces}; also checks each piece's result is released in order. */
    private static ThinkingSplit feed(boolean inside, List<String> pieces) {
        ThinkingParser p = ThinkingParser.qwen(inside);
        StringBuilder thinking = new StringBuilder(), content = new StringBuilder();
        for (String piece : pieces) {
            ThinkingSplit s = p.add(piece);
            if (!s.thinking().isEmpty()) assertTrue(content.isEmpty(), "thinking after the answer began: " + pieces);
            thinking.append(s.thinking());
            content.append(s.content());
        }
        ThinkingSplit end = p.finish();
        if (!end.thinking().isEmpty()) assertTrue(content.isEmpty(), "thinking after the answer began: " + pieces);
        thinking.append(end.thinking());
        content.append(end.content());
        return new ThinkingSplit(thinking.toString(), content.toString());
    }

    /** Asserts that {@code output} divides into (thinking, content) however it is cut. */
    private static void divides(boolean inside, String output, String thinking, String content) {
        ThinkingSplit want = new ThinkingSplit(thinking, content);
        assertEquals(want, feed(inside, List.of(output)), "whole: " + output);
        for (int cut = 0; cut <= output.length(); cut++) {
            assertEquals(want, feed(inside, List.of(output.substring(0, cut), output.substring(cut))), "cut at " + cut + ": " + output);
        }
        List<String> chars = new ArrayList<>();
        for (int i = 0; i < output.length(); i++) chars.add(output.substring(i, i + 1));
        assertEquals(want, feed(inside, chars), "one character at a time: " + output);
        Random random = new Random(output.hashCode());
        for (int round = 0; round < 50; round++) {
            List<String> pieces = new ArrayList<>();
            for (int at = 0; at < output.length(); ) {
                int n = Math.min(output.length() - at, random.nextInt(5));
                pieces.add(output.substring(at, at + n));
                at += n;
            }
            assertEquals(want, feed(inside, pieces), "pieces " + pieces);
        }
    }

    @Test
    void thinkingThenAnswer() {
        divides(false, "<think>\nThe user says hi.\nGreet back.\n</think>\n\nHello!", "The user says hi.\nGreet back.", "Hello!");
    }

    @Test
    void whitespaceBeforeTheOpeningTagAndInsideTheBlock() {
        divides(false, " \n<think>  a  b \n\n</think>  \n x y ", "a  b", "x y ");
    }

    @Test
    void emptyThinking() {
        divides(false, "<think>\n\n</think>\n\nAnswer.", "", "Answer.");
        divides(false, "<think></think>Answer.", "", "Answer.");
        divides(false, "<think>\n\n</think>\n\n", "", "");
    }

    @Test
    void noClosingTagIsAllThinking() {
        divides(false, "<think>\nStill thinking when the tokens ran out", "Still thinking when the tokens ran out", "");
        divides(false, "<think>\nhalf a tag </thi", "half a tag </thi", "");
        divides(false, "<think>\n  \n", "", "");
    }

    @Test
    void outputWithoutTheBlockIsAllAnswerUnchanged() {
        divides(false, "  Just an answer, <think> later is text.", "", "  Just an answer, <think> later is text.");
        divides(false, "<thinking>is not the tag", "", "<thinking>is not the tag");
        divides(false, "<thi", "", "<thi");
        divides(false, "\n\n", "", "\n\n");
        divides(false, "", "", "");
    }

    @Test
    void promptOpenedTheBlock() {
        divides(true, "\nThe prompt opened it.\n</think>\n\nAnswer.", "The prompt opened it.", "Answer.");
        divides(true, "<think>\nopened twice\n</think>\nAnswer.", "opened twice", "Answer.");
        divides(true, "no closing tag", "no closing tag", "");
        divides(true, "</think>\n\nAt once.", "", "At once.");
    }

    @Test
    void tagsAfterTheBlockAreAnswerText() {
        divides(false, "<think>a < b </ c</think>x </think> <think>", "a < b </ c", "x </think> <think>");
        divides(false, "<think>\u00e9t\u00e9 \uD83D\uDE00</think>\uD83D\uDE00", "\u00e9t\u00e9 \uD83D\uDE00", "\uD83D\uDE00");
    }

    @Test
    void thinkingIsReleasedAsItComesNotAtTheEnd() {
        ThinkingParser p = ThinkingParser.qwen(false);
        assertEquals(ThinkingSplit.EMPTY, p.add("<th"));
        assertEquals(ThinkingSplit.EMPTY, p.add("ink>\n"));
        assertTrue(p.inThinking());
        assertEquals(new ThinkingSplit("Step", ""), p.add("Step"));
        assertEquals(new ThinkingSplit(" one", ""), p.add(" one\n"));   // the newline waits: it may end the block
        assertEquals(new ThinkingSplit("\nStep two", ""), p.add("Step two</"));
        assertEquals(ThinkingSplit.EMPTY, p.add("think>\n"));
        assertFalse(p.inThinking());
        assertEquals(new ThinkingSplit("", "Done"), p.add("Done"));
        assertEquals(ThinkingSplit.EMPTY, p.finish());
    }

    @Test
    void thinkingThenToolCall() {
        ReplyFormat format = new ReplyFormat(true, false, ToolCallFormat.QWEN_XML);
        AssistantReply reply = format.parse("<think>\nI need the weather.\n</think>\n\n<tool_call>\n"
                + "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>");
        assertEquals("I need the weather.", reply.thinking());
        assertEquals("", reply.content());
        assertEquals(1, reply.toolCalls().size());
        assertEquals("get_weather", reply.toolCalls().getFirst().name());
        assertEquals(Templates.json("{\"city\": \"Paris\"}"), reply.toolCalls().getFirst().arguments());

        // a call inside the thinking is part of the thinking, not a call
        AssistantReply inThought = format.parse("<think>maybe <tool_call>{\"name\": \"x\", \"arguments\": {}}</tool_call></think>No call.");
        assertEquals(List.of(), inThought.toolCalls());
        assertEquals("No call.", inThought.content());
        assertTrue(inThought.thinking().contains("<tool_call>"));
    }

    @Test
    void formatWithoutThinkingLeavesTheTagsInTheAnswer() {
        AssistantReply reply = ReplyFormat.PLAIN.parse("<think>x</think>y");
        assertEquals("<think>x</think>y", reply.content());
        assertEquals("", reply.thinking());
    }
}
