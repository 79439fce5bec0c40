package dev.forkpoint.chat;

/** How a model writes tool calls in its output, as its chat template shows. */
public enum ToolCallFormat {
    /** No tool calls recognised: the output is all content. */
    NONE,
    /** Qwen/Hermes: {@code <tool_call>{"name": …, "arguments": {…}}</tool_call>}, one or more. */
    QWEN_XML,
    /** Llama 3.1+: the whole reply is a JSON object {@code {"name": …, "parameters": {…}}} (or {@code "arguments"}). */
    LLAMA3_JSON,
    /**
     * A call the request forced (structured outputs, {@code dev.forkpoint.sampling.structured.ToolCallGrammar}): the
     * whole reply is {@code {"name": …, "arguments": {…}}}, whatever the model's own format; cut short, it stays text.
     */
    FORCED
}
