package dev.forkpoint.chat;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.format.ModelFormatException;
import dev.forkpoint.tokenizer.TokenOffsets;
import dev.forkpoint.tokenizer.Tokenizer;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A model's chat template: renders messages (and tools) to the raw prompt, and knows how the model writes tool calls.
 *
 * <p>With a Jinja source ({@code tokenizer.chat_template}) the template is rendered as Hugging Face transformers does
 * (see {@link JinjaTemplate}) with {@code messages}, {@code tools} (only when there are some), {@code
 * add_generation_prompt}, {@code bos_token} and {@code eos_token}. Messages are passed in the OpenAI shape: {@code
 * role}, {@code content}, and only where present {@code tool_calls} ({@code {"id","type":"function","function":
 * {"name","arguments"}}}, arguments as an object), {@code tool_call_id} and {@code name}, and for an assistant message
 * with thinking {@code reasoning_content} (what Qwen3 templates read; also as {@code thinking}). A request's
 * {@link ThinkMode} becomes {@code enable_thinking} (true/false, only when the request said) and {@code
 * reasoning_effort} (only for a level). When the tokenizer adds BOS itself, a BOS the template writes at the start is
 * dropped (no double BOS).
 *
 * <p>Thinking: a template that writes {@value #THINK_CLOSE} (Qwen3, Qwen3.5, DeepSeek-R1) belongs to a model that thinks
 * in a {@value #THINK_OPEN} … {@value #THINK_CLOSE} block ({@link #supportsThinking()}); {@link #replyFormat} says how
 * a request's output is divided.
 *
 * <p>Plain format (models without a template): the messages' contents joined by a blank line, roles unmarked.
 *
 * <p>Immutable and thread-safe (but for a small cache of what the template writes after a message, see
 * {@link MessageEnds}); the Jinja source is parsed once.
 */
public final class ChatTemplate {
    private static final Set<String> PLAIN_ROLES = Set.of("system", "user", "assistant", "tool");
    /** The tags of a thinking block. */
    public static final String THINK_OPEN = "<think>", THINK_CLOSE = "</think>";

    private final String source;
    private final Tokenizer tokenizer;
    private final JinjaTemplate jinja;
    private final ToolCallFormat toolCallFormat;
    private final boolean thinking;
    private final OllamaTemplate ollama;   // a store model's TEMPLATE layer, or null
    private final MessageEnds.Closings closings = new MessageEnds.Closings();

    private ChatTemplate(String source, Tokenizer tokenizer, JinjaTemplate jinja) {
        this(source, tokenizer, jinja, null);
    }

    private ChatTemplate(String source, Tokenizer tokenizer, JinjaTemplate jinja, OllamaTemplate ollama) {
        this.ollama = ollama;
        this.source = source;
        this.tokenizer = tokenizer;
        this.jinja = jinja;
        this.toolCallFormat = detectFormat(source);
        this.thinking = source != null && source.contains(THINK_CLOSE);
    }

    /**
     * The template of a model: {@code source} is its Jinja text ({@code tokenizer.chat_template} in GGUF), or null when
     * the model has none (the plain format is used). A template that does not parse throws
     * {@link dev.forkpoint.format.ModelFormatException} naming the template.
     */
    public static ChatTemplate of(String source, Tokenizer tokenizer) {
        return of(source, tokenizer, null);
    }

    /** As {@link #of(String, Tokenizer)}; {@code file} (may be null) is the model file errors name. */
    public static ChatTemplate of(String source, Tokenizer tokenizer, Path file) {
        if (source == null) return new ChatTemplate(null, tokenizer, null);
        try {
            return new ChatTemplate(source, tokenizer, JinjaTemplate.compile(source));
        } catch (IllegalArgumentException e) {
            throw new ModelFormatException(file == null ? Path.of("model") : file, "tokenizer.chat_template",
                    "the Jinja template does not parse: " + e.getMessage());
        }
    }

    /**
     * The template of a store model whose TEMPLATE layer is in the supported Go-template subset ({@link OllamaTemplate}):
     * it replaces the GGUF's template; no thinking, no tool calls.
     */
    public static ChatTemplate ollama(OllamaTemplate template, Tokenizer tokenizer) {
        return new ChatTemplate(null, tokenizer, null, template);
    }

    /** The store's TEMPLATE layer this template runs, or null when it is the GGUF's (or the plain format). */
    public String ollamaSource() { return ollama == null ? null : ollama.source(); }

    /** The Jinja source, or null for the plain format. */
    public String source() { return source; }

    /** How this model writes tool calls (from the template's text). */
    public ToolCallFormat toolCallFormat() { return toolCallFormat; }

    /** Whether the model thinks in {@value #THINK_OPEN} … {@value #THINK_CLOSE} blocks (its template writes the closing tag). */
    public boolean supportsThinking() { return thinking; }

    /**
     * How the output of a request rendered to {@code prompt} with {@code think} is divided: thinking is looked for when
     * the template supports it and the request did not turn it off (as Ollama does: not asking means the model's
     * default), and the output starts inside the block when the prompt ends with its opening tag; tool calls are
     * parsed when {@code tools} were offered and the template has a format.
     */
    public ReplyFormat replyFormat(String prompt, ThinkMode think, boolean tools) {
        boolean thinks = thinking && (think == null || think.thinksWhenSupported());
        boolean inside = thinks && prompt != null && prompt.stripTrailing().endsWith(THINK_OPEN);
        return new ReplyFormat(thinks, inside, tools ? toolCallFormat : ToolCallFormat.NONE);
    }

    /**
     * Renders {@code messages} with {@code tools} (may be empty); with {@code addGenerationPrompt} the prompt ends where
     * the assistant's reply begins. A role the template refuses, an empty message list or a template error
     * ({@code raise_exception}) throws {@link InvalidInputException} naming the message or the template's message.
     *
     * <p>{@link RenderedChat#messageEnds()}: where the next message's rendering begins (after the message's closing,
     * e.g. Qwen's {@code <|im_end|>\n}), −1 where that is not known. A Jinja template finds them with a second render of
     * the whole chat whose contents are followed by marks, plus a constant-size render per end ({@link MessageEnds});
     * a template that transforms, drops, repeats or reorders the marked content gets the exhaustive way instead: one
     * render of each growing prefix of the messages (without generation prompt), an end where that rendering is a
     * prefix of the whole prompt. Both find the same ends where a template renders a message alike whether or not
     * later ones follow; where it does not (Qwen3's earlier assistant turns), the prefixes find none.
     */
    public RenderedChat render(List<ChatMessage> messages, List<ToolDefinition> tools, boolean addGenerationPrompt) {
        return render(messages, tools, addGenerationPrompt, ThinkMode.DEFAULT);
    }

    /** {@link #render(List, List, boolean)} with the request's thinking mode ({@code enable_thinking}, {@code reasoning_effort}). */
    public RenderedChat render(List<ChatMessage> messages, List<ToolDefinition> tools, boolean addGenerationPrompt, ThinkMode think) {
        return render(messages, tools, addGenerationPrompt, think, Integer.MAX_VALUE);
    }

    /**
     * {@link #render(List, List, boolean, ThinkMode)} finding the ends of the last {@code endsWanted} messages only
     * (the others are −1): a Jinja template renders the whole chat once, and when any end is wanted once more with
     * marks, plus a render of a few messages per shape of message not met before (for a template the marks cannot
     * vouch for: once more per end wanted, each growing prefix), so a caller that uses no message ends
     * ({@link dev.forkpoint.engine.LoadedModel#forkPointsUsed()} 0: an attention-only model) renders the chat exactly
     * once.
     */
    public RenderedChat render(List<ChatMessage> messages, List<ToolDefinition> tools, boolean addGenerationPrompt, ThinkMode think,
                               int endsWanted) {
        return render(messages, tools, addGenerationPrompt, think, endsWanted, false);
    }

    /** Test seam: {@link #render(List, List, boolean, ThinkMode)} finding every end by rendering each prefix. */
    RenderedChat renderByPrefixes(List<ChatMessage> messages, List<ToolDefinition> tools, boolean addGenerationPrompt, ThinkMode think) {
        return renderByPrefixes(messages, tools, addGenerationPrompt, think, Integer.MAX_VALUE);
    }

    /**
     * {@link #render(List, List, boolean, ThinkMode, int)} the exhaustive way, the reference of tests and benchmarks:
     * each wanted end by a render of the growing prefix of the messages (without generation prompt), an end where it
     * is a prefix of the whole prompt.
     */
    public RenderedChat renderByPrefixes(List<ChatMessage> messages, List<ToolDefinition> tools, boolean addGenerationPrompt, ThinkMode think,
                                         int endsWanted) {
        return render(messages, tools, addGenerationPrompt, think, endsWanted, true);
    }

    private RenderedChat render(List<ChatMessage> messages, List<ToolDefinition> tools, boolean addGenerationPrompt, ThinkMode think,
                                int endsWanted, boolean byPrefixes) {
        if (think == null) think = ThinkMode.DEFAULT;
        if (messages.isEmpty()) throw new InvalidInputException("messages must not be empty");
        if (tools == null) tools = List.of();
        if (ollama != null) return ollama.renderChat(messages);
        if (jinja == null) return renderPlain(messages);
        List<Map<String, Object>> messageMaps = new ArrayList<>(messages.size());
        for (ChatMessage m : messages) messageMaps.add(messageMap(m));
        List<Object> toolMaps = new ArrayList<>(tools.size());
        for (ToolDefinition t : tools) toolMaps.add(toolMap(t));

        ThinkMode mode = think;
        List<Object> all = new ArrayList<>(messageMaps);   // a list the template may change, as before
        String full = renderJinja(all, toolMaps, addGenerationPrompt, mode);
        String prompt = stripBos(full);
        int offset = full.length() - prompt.length();
        int from = (int) Math.max(0, messages.size() - (long) Math.max(0, endsWanted));
        int[] ends = null;
        if (from < messages.size() && !byPrefixes) {
            ends = MessageEnds.find(messages, messageMaps, full, offset, from, addGenerationPrompt,
                    (maps, generation) -> renderJinja(maps, toolMaps, generation, mode), closings, List.of(toolMaps, mode));
        }
        if (ends == null) ends = prefixEnds(all, toolMaps, full, offset, from, addGenerationPrompt, mode);
        return new RenderedChat(prompt, ends);
    }

    /**
     * The ends of messages from {@code from} on found by rendering each growing prefix of the messages (without
     * generation prompt) and keeping those that are a prefix of {@code full}: one render per end.
     */
    private int[] prefixEnds(List<Object> messageMaps, List<Object> toolMaps, String full, int offset, int from,
                     boolean addGenerationPrompt, ThinkMode think) {
        int n = messageMaps.size();
        int[] ends = new int[n];
        int lastEnd = 0;   // the last end that is not -1: ends that are set ascend strictly
        for (int i = 0; i < n; i++) {
            if (i < from) {   // not wanted: not rendered
                ends[i] = -1;
                continue;
            }
            String part;
            if (i == n - 1 && !addGenerationPrompt) {
                part = full;
            } else {
                try {
                    part = renderJinja(messageMaps.subList(0, i + 1), toolMaps, false, think);
                } catch (InvalidInputException e) {
                    part = null;  // the template refuses this prefix (e.g. it must end with a user turn)
                }
            }
            boolean ok = part != null && full.startsWith(part) && part.length() - offset > lastEnd;
            ends[i] = ok ? part.length() - offset : -1;
            if (ok) lastEnd = ends[i];
        }
        return ends;
    }

    private String renderJinja(List<Object> messages, List<Object> tools, boolean addGenerationPrompt, ThinkMode think) {
        Map<String, Object> vars = new HashMap<>();
        if (think.enabled() != null) vars.put("enable_thinking", think.enabled());
        if (think.level() != null) vars.put("reasoning_effort", think.level());
        vars.put("messages", messages);
        if (!tools.isEmpty()) vars.put("tools", tools);
        vars.put("add_generation_prompt", addGenerationPrompt);
        vars.put("bos_token", piece(tokenizer.bosId()));
        vars.put("eos_token", piece(tokenizer.eosId()));
        return jinja.render(vars);
    }

    private String piece(int id) {
        return id < 0 ? "" : tokenizer.piece(id);
    }

    private String stripBos(String text) {
        String bos = piece(tokenizer.bosId());
        if (tokenizer.addsBos() && !bos.isEmpty() && text.startsWith(bos)) return text.substring(bos.length());
        return text;
    }

    static Map<String, Object> messageMap(ChatMessage m) {
        Map<String, Object> map = new LinkedHashMap<>();
        map.put("role", m.role());
        map.put("content", m.content());
        if (!m.toolCalls().isEmpty()) {
            List<Object> calls = new ArrayList<>();
            for (ToolCall c : m.toolCalls()) {
                Map<String, Object> function = new LinkedHashMap<>();
                function.put("name", c.name());
                function.put("arguments", PyJson.toPlain(ToolCallParser.argumentsObject(c.arguments())));
                Map<String, Object> call = new LinkedHashMap<>();
                call.put("id", c.id());
                call.put("type", "function");
                call.put("function", function);
                calls.add(call);
            }
            map.put("tool_calls", calls);
        }
        if (!m.thinking().isEmpty()) {
            map.put("reasoning_content", m.thinking());
            map.put("thinking", m.thinking());
        }
        if (m.toolCallId() != null) map.put("tool_call_id", m.toolCallId());
        if (m.toolName() != null) map.put("name", m.toolName());
        return map;
    }

    private static Map<String, Object> toolMap(ToolDefinition t) {
        Map<String, Object> function = new LinkedHashMap<>();
        function.put("name", t.name());
        function.put("description", t.description() == null ? "" : t.description());
        Object parameters = PyJson.toPlain(t.parameters());
        if (parameters == null) {
            Map<String, Object> empty = new LinkedHashMap<>();
            empty.put("type", "object");
            empty.put("properties", new LinkedHashMap<>());
            parameters = empty;
        }
        function.put("parameters", parameters);
        Map<String, Object> tool = new LinkedHashMap<>();
        tool.put("type", "function");
        tool.put("function", function);
        return tool;
    }

    private static RenderedChat renderPlain(List<ChatMessage> messages) {
        StringBuilder prompt = new StringBuilder();
        int[] ends = new int[messages.size()];
        for (int i = 0; i < messages.size(); i++) {
            ChatMessage m = messages.get(i);
            if (!PLAIN_ROLES.contains(m.role())) {
                throw new InvalidInputException("messages[" + i + "].role must be system, user, assistant or tool, got '" + m.role() + "'");
            }
            if (i > 0) prompt.append("\n\n");
            prompt.append(m.content());
            ends[i] = prompt.length();
        }
        return new RenderedChat(prompt.toString(), ends);
    }

    /** Splits a finished assistant output into content and tool calls, per {@link #toolCallFormat()}. */
    public AssistantReply parseReply(String output) {
        return ToolCallParser.parse(toolCallFormat, output);
    }

    /**
     * Encodes a rendered chat once ({@code tokenizer.encode(chat.prompt(), true, true)}) and finds its messages' ends
     * in those tokens ({@link TokenOffsets}): the token offset whose tokens cover exactly the text up to a message's
     * end. An end that a token spans (a merge across it), that is not known (−1) or that the tokens cannot be lined
     * up with is left out; the offsets found ascend strictly. The work is one encoding and one pass over its tokens,
     * however many messages the chat has.
     */
    public ChatTokens encode(RenderedChat chat) {
        int[] tokens = tokenizer.encode(chat.prompt(), true, true);
        int[] at = TokenOffsets.indices(tokenizer, chat.prompt(), tokens, chat.messageEnds());
        int[] boundaries = new int[at.length];
        int n = 0;
        for (int b : at) {
            if (b > 0 && b <= tokens.length && (n == 0 || b > boundaries[n - 1])) boundaries[n++] = b;
        }
        return new ChatTokens(tokens, Arrays.copyOf(boundaries, n));
    }

    /** The tool-call format the template's text shows. */
    static ToolCallFormat detectFormat(String source) {
        if (source == null) return ToolCallFormat.NONE;
        if (source.contains("<tool_call>")) return ToolCallFormat.QWEN_XML;
        if (source.contains("<|python_tag|>") || source.contains("ipython")
                || (source.contains("\"parameters\"") && source.contains("tools"))) {
            return ToolCallFormat.LLAMA3_JSON;
        }
        return ToolCallFormat.NONE;
    }
}
