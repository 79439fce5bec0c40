package dev.forkpoint.server.anthropic;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.chat.AssistantReply;
import dev.forkpoint.chat.ChatMessage;
import dev.forkpoint.chat.ReplyFormat;
import dev.forkpoint.chat.ThinkMode;
import dev.forkpoint.chat.ToolCall;
import dev.forkpoint.sampling.structured.GrammarNode;
import dev.forkpoint.server.ConstrainedReply;
import dev.forkpoint.server.ForcedToolCalls;
import dev.forkpoint.chat.ToolDefinition;
import dev.forkpoint.engine.GenerationCancelledException;
import dev.forkpoint.engine.GenerationEvent;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.sampling.SamplingOptions;
import dev.forkpoint.server.ApiError;
import dev.forkpoint.server.BadFieldException;
import dev.forkpoint.server.ClientGoneException;
import dev.forkpoint.server.Completion;
import dev.forkpoint.server.EventStream;
import dev.forkpoint.server.Json;
import dev.forkpoint.server.ModelLease;
import dev.forkpoint.server.OllamaOptions;
import dev.forkpoint.server.ReplyStream;
import dev.forkpoint.server.ServedModel;
import dev.forkpoint.server.ServerApi;
import dev.forkpoint.server.ServerCore;
import io.javalin.http.Context;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Anthropic's Messages API: {@code POST /v1/messages} and {@code POST /v1/messages/count_tokens}. The API key may come
 * as {@code x-api-key} (checked by the core); {@code anthropic-version} is accepted (there is one behaviour).
 *
 * <p>Usage: {@code input_tokens} = prompt tokens evaluated (not reused), {@code cache_read_input_tokens} = prompt
 * tokens reused from the prefix cache (the two add up to the prompt), {@code cache_creation_input_tokens} 0 (the
 * prefix cache needs no explicit cache writes), {@code output_tokens} = tokens generated. {@code stop_reason}:
 * {@code tool_use} when the reply holds tool calls, {@code stop_sequence} (with {@code stop_sequence} naming the one
 * that matched), {@code max_tokens}, else {@code end_turn}.
 *
 * <p>Streaming (SSE, {@code event: <type>}): {@code message_start}, {@code content_block_start}, {@code ping},
 * {@code content_block_delta} ({@code text_delta}) …, {@code content_block_stop}, {@code message_delta} (stop reason,
 * cumulative usage), {@code message_stop}; an error after streaming began is an {@code event: error}. When tools are
 * given and the model's template has a tool-call format, the reply is buffered and parsed at the end, then sent as a
 * text block and {@code tool_use} blocks (whose input arrives as one {@code input_json_delta}), so text belonging to a
 * call is never streamed as text.
 *
 * <p>Thinking ({@link MessageMapping#thinking}): the thinking block comes back as a first {@code thinking} content block
 * ({@code {"type":"thinking","thinking":…,"signature":""}}: Forkpoint signs nothing, so the signature is empty and
 * is not checked when the block is sent back), streamed as {@code thinking_delta} events (then an empty
 * {@code signature_delta}) before the text block. Thinking counts against {@code max_tokens}; {@code budget_tokens}
 * is checked as Anthropic checks it and caps the thinking: at the budget the engine closes the block itself
 * ({@link dev.forkpoint.engine.ThinkingBudget}) and the model answers.
 * Enabled for a model that cannot think, it is relaxed, as Ollama relaxes it for this API: that model simply uses
 * none of the budget. A thinking block of an assistant message goes back to the template as its thinking.
 *
 * <p>A forced tool choice ({@code any}: one of the tools, {@code tool}: the named one) constrains the output to a call
 * whose input is valid against the tool's {@code input_schema} ({@link ForcedToolCalls}; the output is that call alone, so it holds no thinking): the reply is that
 * {@code tool_use} block ({@code stop_reason: "tool_use"}); cut short by {@code max_tokens}, what was generated comes
 * back as text with {@code stop_reason: "max_tokens"}. An input schema structured outputs cannot follow is a 400 naming
 * its keyword.
 *
 * <p>Refused with a 400 naming the field rather than ignored: a missing {@code max_tokens}, image and document blocks.
 * A prompt plus {@code max_tokens} beyond
 * the model's context is refused naming the field.
 */
public final class AnthropicApi implements ServerApi {
    static final JsonNodeFactory F = JsonNodeFactory.instance;

    private ServerCore core;

    @Override
    public void register(ServerCore core) {
        this.core = core;
        core.routes(AnthropicApi::renderError)
                .post("/v1/messages", this::messages)
                .post("/v1/messages/count_tokens", this::countTokens);
    }

    static void renderError(Context ctx, ApiError e) {
        ctx.contentType("application/json").result(Json.write(error(e)));
    }

    static ObjectNode error(ApiError e) {
        ObjectNode body = F.objectNode();
        body.put("type", "error");
        ObjectNode err = body.putObject("error");
        err.put("type", switch (e.kind()) {
            case BAD_REQUEST, TIMEOUT -> "invalid_request_error";
            case UNAUTHORIZED -> "authentication_error";
            case FORBIDDEN -> "permission_error";
            case TOO_MANY_REQUESTS -> "rate_limit_error";
            case NOT_FOUND -> "not_found_error";
            case PAYLOAD_TOO_LARGE -> "request_too_large";
            case BUSY -> "overloaded_error";
            case INTERNAL, CANCELLED -> "api_error";
        });
        err.put("message", e.param() == null || e.param().isEmpty() || e.message().contains(e.param())
                ? e.message() : e.param() + ": " + e.message());
        return body;
    }

    // ---- messages ----

    private void messages(Context ctx) throws InterruptedException {
        var req = Json.read(ctx, AnthropicRequests.Messages.class);
        if (req.maxTokens() == null) throw new BadFieldException("max_tokens", "max_tokens: Field required");
        if (req.maxTokens() < 1) throw new BadFieldException("max_tokens", "max_tokens must be at least 1, got " + req.maxTokens());
        ThinkMode think = MessageMapping.thinking(req.thinking(), req.maxTokens());
        List<ChatMessage> messages = MessageMapping.messages(req.system(), req.messages());
        List<ToolDefinition> tools = MessageMapping.tools(req.tools(), req.toolChoice());
        List<ToolDefinition> forced = MessageMapping.forcedTools(req.toolChoice(), tools);
        GrammarNode grammar = forced == null ? null : ForcedToolCalls.grammar(forced, "tools[%d].input_schema", tools);
        think = ConstrainedReply.think(think, grammar, "thinking", "a forced tool_choice");
        options(req, Map.of());   // bad fields before the model is loaded
        try (ModelLease lease = core.models().acquire(req.model(), null)) {
            ServedModel model = lease.model();
            OllamaOptions options = options(req, model.parameters());
            ServedModel.ChatPrompt chat = model.renderChat(messages, tools, options.numCtx(), "messages", relaxed(model, think));
            GenerationRequest request = chat.request(options.sampling(), options.numCtx(), options.numBatch(), "").withGrammar(grammar);
            int budget = MessageMapping.thinkingBudget(req.thinking());
            if (budget > 0 && forced == null) request = request.withThinkingBudget(model.thinkingBudget(chat, budget));
            Reply reply = new Reply(model.name(), forced != null ? ForcedToolCalls.REPLY : chat.reply());
            Completion completion = model.submit(request, "messages", "max_tokens");   // 400 / 503 here, before anything is sent
            if (Boolean.TRUE.equals(req.stream())) stream(ctx, completion, reply);
            else {
                try (completion) {
                    ctx.json(reply.whole(completion.await(ctx)));
                }
            }
        }
    }

    /** Thinking enabled for a model that cannot think: the model's default (it thinks not at all), as Ollama relaxes it. */
    private static ThinkMode relaxed(ServedModel model, ThinkMode think) {
        return think.requested() && !model.chatTemplate().supportsThinking() ? ThinkMode.DEFAULT : think;
    }

    /**
     * Anthropic's sampling: temperature 1 in [0, 1], top_p (1) in [0, 1], top_k (off) ≥ 0, stop_sequences, max_tokens;
     * a store model's parameters ({@code modelParams}, num_ctx and num_batch included) lie between these defaults and
     * the request's fields, as in Ollama.
     */
    private static OllamaOptions options(AnthropicRequests.Messages req, Map<String, Object> modelParams) {
        Map<String, Object> defaults = new HashMap<>(Map.of("temperature", 1.0, "top_p", 1.0, "top_k", 0));
        if (modelParams != null) defaults.putAll(modelParams);
        OllamaOptions base = OllamaOptions.parse(defaults);
        SamplingOptions o = base.sampling().withNumPredict(req.maxTokens());
        if (req.temperature() != null) {
            double t = req.temperature();
            if (!(t >= 0 && t <= 1)) throw new BadFieldException("temperature", "temperature must be in [0, 1], got " + t);
            o = o.withTemperature(t);
        }
        if (req.topP() != null) {
            double p = req.topP();
            if (!(p >= 0 && p <= 1)) throw new BadFieldException("top_p", "top_p must be in [0, 1], got " + p);
            o = o.withTopP(p);
        }
        if (req.topK() != null) {
            if (req.topK() < 0) throw new BadFieldException("top_k", "top_k must be >= 0, got " + req.topK());
            o = o.withTopK(req.topK());
        }
        if (req.stopSequences() != null) {
            List<String> stops = req.stopSequences();
            if (stops.size() > SamplingOptions.MAX_STOP_STRINGS) {
                throw new BadFieldException("stop_sequences", "stop_sequences holds at most " + SamplingOptions.MAX_STOP_STRINGS + " strings, got " + stops.size());
            }
            for (int i = 0; i < stops.size(); i++) {
                if (stops.get(i) == null || stops.get(i).isEmpty()) {
                    throw new BadFieldException("stop_sequences[" + i + "]", "stop_sequences[" + i + "] must be a non-empty string");
                }
            }
            o = o.withStop(stops);
        }
        return new OllamaOptions(o.validate(), base.numCtx(), base.numBatch());
    }

    // ---- count_tokens ----

    private void countTokens(Context ctx) {
        var req = Json.read(ctx, AnthropicRequests.CountTokens.class);
        ThinkMode think = MessageMapping.thinking(req.thinking(), null);
        List<ChatMessage> messages = MessageMapping.messages(req.system(), req.messages());
        List<ToolDefinition> tools = MessageMapping.tools(req.tools(), req.toolChoice());
        try (ModelLease lease = core.models().acquire(req.model(), null)) {
            ServedModel model = lease.model();
            ObjectNode body = F.objectNode();
            body.put("input_tokens", model.renderChat(messages, tools, 0, "messages", relaxed(model, think)).tokens().tokens().length);
            ctx.json(body);
        }
    }

    // ---- streaming ----

    private static void stream(Context ctx, Completion completion, Reply reply) throws InterruptedException {
        try (EventStream out = EventStream.sse(ctx, completion)) {
            Blocks blocks = new Blocks(out);
            for (GenerationEvent e; (e = out.next()) != null; ) {
                switch (e) {
                    case GenerationEvent.Started s -> {
                        out.send("message_start", reply.start(s.promptTokens() - s.cachedTokens(), s.cachedTokens()));
                        // a reply that can hold neither thinking nor tool calls is one text block: open it at once
                        if (!reply.format.thinking() && !reply.format.parsesTools()) blocks.text("");
                        out.send("ping", F.objectNode().put("type", "ping"));
                    }
                    case GenerationEvent.Text t -> {
                        ReplyStream.Delta d = reply.stream.text(t);
                        if (d != null) {
                            blocks.thinking(d.thinking());
                            blocks.text(d.content());
                        }
                    }
                    case GenerationEvent.Done d -> {
                        GenerationResult r = d.result();
                        ReplyStream.End end = reply.stream.end(r);
                        AssistantReply parsed = end.reply();
                        blocks.thinking(end.thinking());
                        if (reply.format.parsesTools()) {
                            blocks.close();
                            for (ObjectNode block : reply.blocks(parsed)) {
                                String type = block.path("type").asText();
                                if (type.equals("thinking")) continue;   // streamed already
                                boolean tool = type.equals("tool_use");
                                ObjectNode start = block.deepCopy();
                                if (tool) start.putObject("input");
                                else start.put("text", "");
                                int index = blocks.open(start);
                                if (tool) {
                                    out.send("content_block_delta", delta(index, F.objectNode().put("type", "input_json_delta")
                                            .put("partial_json", Json.write(block.get("input")))));
                                } else if (!block.path("text").asText().isEmpty()) {
                                    out.send("content_block_delta", delta(index, textDelta(block.path("text").asText())));
                                }
                                blocks.close();
                            }
                        } else {
                            blocks.text(end.content());
                            if (!blocks.textSeen) blocks.open(textBlock(""));   // the reply's (empty) text block
                            blocks.close();
                        }
                        ObjectNode md = F.objectNode().put("type", "message_delta");
                        ObjectNode dd = md.putObject("delta");
                        dd.put("stop_reason", stopReason(r, parsed));
                        if (r.stopSequence() == null || !parsed.toolCalls().isEmpty()) dd.putNull("stop_sequence");
                        else dd.put("stop_sequence", r.stopSequence());
                        md.set("usage", usage(r));
                        out.send("message_delta", md);
                        out.send("message_stop", F.objectNode().put("type", "message_stop"));
                    }
                    case GenerationEvent.Failed f -> {
                        if (f.error() instanceof GenerationCancelledException) throw new ClientGoneException(f.error());
                        out.send("error", error(ApiError.of(f.error())));
                    }
                }
            }
        }
    }

    /** The content blocks of a streamed message: at most one open at a time, indexed in order. */
    private static final class Blocks {
        private final EventStream out;
        private int next;          // the index of the next block
        private String open;       // the type of the open block, or null
        boolean textSeen;

        Blocks(EventStream out) { this.out = out; }

        /** Starts a block (closing the open one); returns its index. */
        int open(ObjectNode block) {
            close();
            open = block.path("type").asText();
            if (open.equals("text")) textSeen = true;
            out.send("content_block_start", blockStart(next, block));
            return next;
        }

        void close() {
            if (open == null) return;
            if (open.equals("thinking")) {
                out.send("content_block_delta", delta(next, F.objectNode().put("type", "signature_delta").put("signature", "")));
            }
            out.send("content_block_stop", blockStop(next++));
            open = null;
        }

        /** Thinking text: into the thinking block (opened when needed). */
        void thinking(String text) {
            if (text.isEmpty()) return;
            if (!"thinking".equals(open)) open(thinkingBlock(""));
            out.send("content_block_delta", delta(next, F.objectNode().put("type", "thinking_delta").put("thinking", text)));
        }

        /** Answer text: into the text block (opened when needed, closing the thinking block); "" opens it only. */
        void text(String text) {
            if (text.isEmpty() && open != null) return;
            if (text.isEmpty() && textSeen) return;
            if (!"text".equals(open)) open(textBlock(""));
            if (!text.isEmpty()) out.send("content_block_delta", delta(next, textDelta(text)));
        }
    }

    private static ObjectNode blockStart(int index, ObjectNode block) {
        ObjectNode n = F.objectNode().put("type", "content_block_start").put("index", index);
        n.set("content_block", block);
        return n;
    }

    private static ObjectNode delta(int index, ObjectNode delta) {
        ObjectNode n = F.objectNode().put("type", "content_block_delta").put("index", index);
        n.set("delta", delta);
        return n;
    }

    private static ObjectNode blockStop(int index) {
        return F.objectNode().put("type", "content_block_stop").put("index", index);
    }

    private static ObjectNode textDelta(String text) {
        return F.objectNode().put("type", "text_delta").put("text", text);
    }

    private static ObjectNode textBlock(String text) {
        return F.objectNode().put("type", "text").put("text", text);
    }

    private static ObjectNode thinkingBlock(String thinking) {
        return F.objectNode().put("type", "thinking").put("thinking", thinking).put("signature", "");
    }

    static String stopReason(GenerationResult r, AssistantReply parsed) {
        if (!parsed.toolCalls().isEmpty()) return "tool_use";
        if (r.stopSequence() != null) return "stop_sequence";
        if (r.doneReason().equals("length")) return "max_tokens";
        return "end_turn";
    }

    static ObjectNode usage(GenerationResult r) {
        ObjectNode u = F.objectNode();
        u.put("input_tokens", r.evaluatedPromptTokens());
        u.put("cache_creation_input_tokens", 0);
        u.put("cache_read_input_tokens", r.cachedTokens());
        u.put("output_tokens", r.generatedIds().length);
        return u;
    }

    /** One message's id, model and shapes. */
    private static final class Reply {
        private final String id = "msg_" + UUID.randomUUID().toString().replace("-", "").substring(0, 24);
        private final String model;
        final ReplyFormat format;
        final ReplyStream stream;

        Reply(String model, ReplyFormat format) {
            this.model = model;
            this.format = format;
            this.stream = new ReplyStream(format);
        }

        /** The content blocks: the thinking (if any), the text (unless empty beside tool calls), then one tool_use block per call. */
        List<ObjectNode> blocks(AssistantReply reply) {
            List<ObjectNode> out = new ArrayList<>();
            if (!reply.thinking().isEmpty()) out.add(thinkingBlock(reply.thinking()));
            if (!reply.content().isEmpty() || reply.toolCalls().isEmpty()) out.add(textBlock(reply.content()));
            for (int i = 0; i < reply.toolCalls().size(); i++) {
                ToolCall c = reply.toolCalls().get(i);
                ObjectNode b = F.objectNode().put("type", "tool_use");
                b.put("id", c.id() != null && c.id().startsWith("toolu_") ? c.id() : "toolu_" + id.substring(4) + "_" + i);
                b.put("name", c.name());
                b.set("input", c.arguments() == null ? F.objectNode() : c.arguments());
                out.add(b);
            }
            return out;
        }

        private ObjectNode message(ArrayNode content) {
            ObjectNode m = F.objectNode();
            m.put("id", id);
            m.put("type", "message");
            m.put("role", "assistant");
            m.put("model", model);
            m.set("content", content);
            return m;
        }

        ObjectNode whole(GenerationResult r) {
            AssistantReply parsed = format.parse(r.text());
            ArrayNode content = F.arrayNode();
            content.addAll(blocks(parsed));
            ObjectNode m = message(content);
            m.put("stop_reason", stopReason(r, parsed));
            if (r.stopSequence() == null || !parsed.toolCalls().isEmpty()) m.putNull("stop_sequence");
            else m.put("stop_sequence", r.stopSequence());
            m.set("usage", usage(r));
            return m;
        }

        ObjectNode start(int inputTokens, int cachedTokens) {
            ObjectNode m = message(F.arrayNode());
            m.putNull("stop_reason");
            m.putNull("stop_sequence");
            ObjectNode u = m.putObject("usage");
            u.put("input_tokens", inputTokens);
            u.put("cache_creation_input_tokens", 0);
            u.put("cache_read_input_tokens", cachedTokens);
            u.put("output_tokens", 0);
            ObjectNode event = F.objectNode().put("type", "message_start");
            event.set("message", m);
            return event;
        }
    }
}
