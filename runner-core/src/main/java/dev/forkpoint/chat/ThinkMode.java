package dev.forkpoint.chat;

/**
 * What a request asks of a thinking model: think or not, or the model's default when it did not say. Each API maps
 * its own field onto it (Ollama {@code think}, OpenAI {@code reasoning_effort} / {@code reasoning.effort}, Anthropic
 * {@code thinking.type}).
 *
 * @param enabled true = think, false = answer at once, null = the template's default (Qwen3 thinks)
 * @param level   an effort level the client named ("low", "medium", "high", "max"), or null; passed to the template as
 *                {@code reasoning_effort} (templates with levels read it; Qwen3's do not, for them a level means on)
 */
public record ThinkMode(Boolean enabled, String level) {
    /** Not asked: the model's default. */
    public static final ThinkMode DEFAULT = new ThinkMode(null, null);
    public static final ThinkMode ON = new ThinkMode(true, null);
    public static final ThinkMode OFF = new ThinkMode(false, null);

    /** Thinking on at an effort level. */
    public static ThinkMode level(String level) {
        return new ThinkMode(true, level);
    }

    /** Whether the request asks for thinking explicitly (true, or a level). */
    public boolean requested() {
        return Boolean.TRUE.equals(enabled);
    }

    /** Whether a model whose template can think does so: unless the request turned it off. */
    public boolean thinksWhenSupported() {
        return !Boolean.FALSE.equals(enabled);
    }
}
