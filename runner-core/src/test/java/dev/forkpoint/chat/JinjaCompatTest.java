package dev.forkpoint.chat;

import dev.forkpoint.InvalidInputException;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Jinja2 semantics chat templates rely on where Jinjava differs; expectations are what Python's Jinja2 with
 * transformers' settings (trim_blocks, lstrip_blocks) prints.
 */
class JinjaCompatTest {
    private static final StubTokenizer TOKENIZER = new StubTokenizer("<s>", "</s>", false);

    private static String render(String template, ChatMessage... messages) {
        return ChatTemplate.of(template, TOKENIZER).render(List.of(messages), List.of(), false).prompt();
    }

    @Test
    void pythonStringMethods() {
        assertEquals("hi there|hi there |  hi there|y|HI|b c",
                render("{{ messages[0].content.strip() }}|{{ messages[0].content.lstrip() }}|{{ messages[0].content.rstrip() }}|"
                        + "{{ 'y' if messages[0].content.startswith('  hi') else 'n' }}|{{ 'hi'.upper() }}|{{ 'a,b c'.split(',')[1] }}",
                        ChatMessage.of("user", "  hi there ")));
        assertEquals("answer", render("{{ messages[0].content.split('</think>')[-1].lstrip('\\n') }}",
                ChatMessage.of("assistant", "<think>x</think>\n\nanswer")));
    }

    @Test
    void keywordArgumentsWithOperators() {
        // Qwen3's template: namespace(multi_step_tool=true, last_query_index=messages|length - 1)
        assertEquals("2|yes|3|yes",
                render("{%- set ns = namespace(flag=true, last=messages|length - 1) %}{{ ns.last }}|{{ 'yes' if ns.flag else 'no' }}|"
                        + "{%- set ns2 = namespace(n=(messages|length) * 1, m=[1, 2][0] + 2) %}{{ ns2.m }}|"
                        + "{{ 'yes' if (messages[0].content == 'a' and (1 >= 0)) and messages[1].content != 'x' else 'no' }}",
                        ChatMessage.of("user", "a"), ChatMessage.of("assistant", "b"), ChatMessage.of("user", "c")));
    }

    @Test
    void reversedSliceAndNotIn() {
        assertEquals("c,b,a|yes|no", render(
                "{% for m in messages[::-1] %}{{ m.content }}{% if not loop.last %},{% endif %}{% endfor %}|"
                        + "{{ 'yes' if not 'tool_calls' in messages[0] else 'no' }}|{{ 'yes' if not messages[0].role is defined else 'no' }}",
                ChatMessage.of("user", "a"), ChatMessage.of("assistant", "b"), ChatMessage.of("user", "c")));
    }

    @Test
    void whitespaceControlAsTransformersSetsIt() {
        assertEquals("user:a\nassistant:b\n", render("""
                {% for m in messages %}
                    {{ m.role }}:{{ m.content }}
                {% endfor %}
                """.replace("    {{", "{{"), ChatMessage.of("user", "a"), ChatMessage.of("assistant", "b")));
        assertEquals("ab", render("{%- for m in messages %}\n    {{- m.content }}\n{%- endfor %}\n",
                ChatMessage.of("user", "a"), ChatMessage.of("assistant", "b")));
    }

    @Test
    void namespaceLoopControlsAndTojson() {
        assertEquals("2|{\"a\": [1, 2.5, \"\\u00e9\\n\"], \"b\": {}}".replace("\\u00e9", "é"), render(
                "{% set ns = namespace(n=0) %}{% for m in messages %}{% if m.role == 'system' %}{% continue %}{% endif %}"
                        + "{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}|{{ {'a': [1, 2.5, 'é\\n'], 'b': {} } | tojson }}",
                ChatMessage.of("system", "s"), ChatMessage.of("user", "u"), ChatMessage.of("assistant", "a")));
    }

    @Test
    void raiseExceptionAndStrftime() {
        InvalidInputException e = assertThrows(InvalidInputException.class,
                () -> render("{{ raise_exception('Only user and assistant roles are supported!') }}", ChatMessage.of("user", "u")));
        assertEquals("Only user and assistant roles are supported!", e.getMessage());
        String date = render("{{ strftime_now('%d %b %Y') }}", ChatMessage.of("user", "u"));
        assertTrue(date.matches("\\d\\d [A-Z][a-z]{2} \\d{4}"), date);
    }
}
