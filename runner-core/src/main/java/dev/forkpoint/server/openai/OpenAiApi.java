package dev.forkpoint.server.openai;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.chat.AssistantReply;
import dev.forkpoint.chat.ChatMessage;
import dev.forkpoint.chat.ReplyFormat;
import dev.forkpoint.chat.ThinkMode;
import dev.forkpoint.chat.ToolCall;
import dev.forkpoint.sampling.structured.GrammarNode;
import dev.forkpoint.sampling.structured.JsonSchemaGrammar;
import dev.forkpoint.server.ConstrainedReply;
import dev.forkpoint.server.ForcedToolCalls;
import dev.forkpoint.chat.ToolDefinition;
import dev.forkpoint.engine.GenerationCancelledException;
import dev.forkpoint.engine.GenerationEvent;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.server.ApiError;
import dev.forkpoint.server.BadFieldException;
import dev.forkpoint.server.ClientGoneException;
import dev.forkpoint.server.Completion;
import dev.forkpoint.server.Embeddings;
import dev.forkpoint.server.EventStream;
import dev.forkpoint.server.Json;
import dev.forkpoint.server.LogprobJson;
import dev.forkpoint.server.ModelLease;
import dev.forkpoint.server.ModelListing;
import dev.forkpoint.server.ModelNotFoundException;
import dev.forkpoint.server.OllamaOptions;
import dev.forkpoint.server.ReplyStream;
import dev.forkpoint.server.ServedModel;
import dev.forkpoint.server.ServerApi;
import dev.forkpoint.server.ServerCore;
import io.javalin.http.Context;

import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;

/**
 * OpenAI's API: {@code POST /v1/chat/completions}, {@code POST /v1/completions}, {@code GET /v1/models} and
 * {@code GET /v1/models/<id>} (the id may hold a slash). Streaming is SSE ({@code data: {json}} chunks ending with {@code data: [DONE]});
 * {@code stream_options.include_usage} adds a last chunk with empty choices and the usage. Usage:
 * {@code prompt_tokens} = all prompt tokens, {@code prompt_tokens_details.cached_tokens} = those reused from the
 * prefix cache, {@code completion_tokens} = tokens generated. Errors are {@code {"error":{"message","type","param",
 * "code"}}} with 400/401/404/413/500/503; an error after streaming began is a last {@code data: {"error":…}} event
 * followed by {@code [DONE]}.
 *
 * <p>Tool calls: when tools are given and the model's template has a tool-call format, the reply is buffered and parsed
 * at the end (also when streaming: the text and the tool calls are then sent as the last deltas), so text that
 * belongs to a call is never streamed as content. Without tools, text streams as it is generated.
 *
 * <p>Thinking ({@code reasoning_effort}, or {@code reasoning.effort}, as Ollama's OpenAI layer reads them: see
 * {@link OpenAiOptions#think}): the thinking block comes back as {@code message.reasoning_content} (the field DeepSeek,
 * vLLM and LiteLLM use) and, with the same text, {@code message.reasoning} (Ollama's), streamed as
 * {@code delta.reasoning_content} / {@code delta.reasoning} while the model thinks (also when tool calls hold the
 * answer back); both are absent when there was no thinking. An assistant message's {@code reasoning_content} (or
 * {@code reasoning}) goes back to the template.
 *
 * <p>Structured outputs: {@code response_format} {@code json_object} (any JSON object) or {@code json_schema} (valid
 * against {@code json_schema.schema}) constrains the content token by token; a forced {@code tool_choice}
 * ("required", or a named function) constrains the reply to a call whose arguments are valid against the function's
 * parameters, returned as {@code tool_calls} ({@code finish_reason: "tool_calls"}). A schema keyword structured
 * outputs do not support is a 400 naming it; both together are a 400. A constrained reply holds no thinking (rendered with thinking off; asked for explicitly
 * beside a grammar, a 400: {@link ConstrainedReply}).
 *
 * <p>{@code /v1/completions} defaults {@code max_tokens} to 16, as OpenAI does; chat completions generate until the end
 * of the reply or of the context. A prompt plus {@code max_tokens} beyond the context is refused naming the field.
 *
 * <p>{@code POST /v1/embeddings}: {@code input} a string, an array of strings, an array of token ids or an array of
 * arrays of token ids (ids used as given, no BOS added); {@code encoding_format} {@code float} or {@code base64}
 * (little-endian float32, base64); {@code dimensions} → {@code {object: "list", data: [{object: "embedding", index,
 * embedding}], model, usage: {prompt_tokens, total_tokens}}}, L2-normalised as Ollama's {@code /api/embed} (see
 * {@link dev.forkpoint.server.Embeddings}). An input beyond the default context is refused naming it (OpenAI does not
 * truncate); an empty input is refused.
 *
 * <p>Shares {@code POST /v1/completions} with the Ollama runner protocol, which claims its own bodies; this API takes
 * the rest (see {@link dev.forkpoint.server.ApiRoutes}).
 */
public final class OpenAiApi implements ServerApi {
    static final JsonNodeFactory F = JsonNodeFactory.instance;
    static final int COMPLETIONS_DEFAULT_MAX_TOKENS = 16;

    private ServerCore core;

    @Override
    public void register(ServerCore core) {
        this.core = core;
        core.routes(OpenAiApi::renderError)
                .post("/v1/chat/completions", this::chat)
                .post("/v1/completions", this::completions)
                .post("/v1/embeddings", this::embeddings)
                .get("/v1/models", this::models)
                .get("/v1/models/<id>", this::model);
    }

    /** OpenAI's error body; the type and code follow the status. */
    static void renderError(Context ctx, ApiError e) {
        ctx.contentType("application/json").result(Json.write(Map.of("error", error(e))));
    }

    static ObjectNode error(ApiError e) {
        ObjectNode err = F.objectNode();
        err.put("message", e.message());
        err.put("type", switch (e.kind()) {
            case BAD_REQUEST, NOT_FOUND, PAYLOAD_TOO_LARGE, UNAUTHORIZED, FORBIDDEN, TIMEOUT -> "invalid_request_error";
            case TOO_MANY_REQUESTS -> "requests";
            case BUSY, INTERNAL, CANCELLED -> "server_error";
        });
        if (e.param() == null || e.param().isEmpty()) err.putNull("param");
        else err.put("param", e.param());
        String code = switch (e.kind()) {
            case UNAUTHORIZED -> "invalid_api_key";
            case NOT_FOUND -> "model_not_found";
            case PAYLOAD_TOO_LARGE -> "request_too_large";
            case BUSY -> "overloaded";
            case TOO_MANY_REQUESTS -> "rate_limit_exceeded";
            default -> e.code();
        };
        if (code == null) err.putNull("code");
        else err.put("code", code);
        return err;
    }

    // ---- chat completions ----

    private void chat(Context ctx) throws InterruptedException {
        var req = Json.read(ctx, OpenAiRequests.Chat.class);
        GrammarNode format = responseFormat(req.responseFormat());
        List<ChatMessage> messages = ChatMapping.messages(req.messages());
        List<ToolDefinition> tools = ChatMapping.tools(req.tools(), req.toolChoice());
        List<ToolDefinition> forced = ChatMapping.forcedTools(req.toolChoice(), tools);
        if (forced != null && format != null) {
            throw new BadFieldException("response_format", "response_format cannot be combined with a forced tool_choice (the reply is the tool call)");
        }
        if (forced != null) format = ForcedToolCalls.grammar(forced, "tools[%d].function.parameters", tools);
        Integer maxTokens = req.maxCompletionTokens() != null ? req.maxCompletionTokens() : req.maxTokens();
        String maxField = req.maxCompletionTokens() != null ? "max_completion_tokens" : "max_tokens";
        OpenAiOptions.options(req, maxTokens, maxField, -1, Map.of());   // bad fields before the model is loaded
        int topLogprobs = OpenAiOptions.topLogprobs(req);
        ThinkMode think = ConstrainedReply.think(OpenAiOptions.think(req), format, OpenAiOptions.thinkField(req),
                forced != null ? "a forced tool_choice" : "response_format");
        try (ModelLease lease = core.models().acquire(req.model(), null)) {
            ServedModel model = lease.model();
            model.requireThinking(think, OpenAiOptions.thinkField(req));
            OllamaOptions options = OpenAiOptions.options(req, maxTokens, maxField, -1, model.parameters());
            ServedModel.ChatPrompt chat = model.renderChat(messages, tools, options.numCtx(), "messages", think);
            GenerationRequest request = chat.request(options.sampling(), options.numCtx(), options.numBatch(), "").withTopLogprobs(topLogprobs)
                    .withGrammar(format);
            Reply reply = new ChatReply(model.name(), ConstrainedReply.format(chat.reply(), format, forced != null), request.wantsLogprobs());
            respond(ctx, model.submit(request, "messages", maxField), Boolean.TRUE.equals(req.stream()), includeUsage(req), reply);
        }
    }

    // ---- completions ----

    private void completions(Context ctx) throws InterruptedException {
        var req = Json.read(ctx, OpenAiRequests.Completion.class);
        String prompt = prompt(req.prompt());
        if (req.echo() != null && req.echo()) throw new BadFieldException("echo", "echo is not supported; remove 'echo'");
        if (req.suffix() != null && !req.suffix().isEmpty()) throw new BadFieldException("suffix", "suffix (fill-in-the-middle) is not supported");
        if (req.bestOf() != null && req.bestOf() != 1) throw new BadFieldException("best_of", "best_of must be 1, got " + req.bestOf());
        OpenAiOptions.options(req, req.maxTokens(), "max_tokens", COMPLETIONS_DEFAULT_MAX_TOKENS, Map.of());   // bad fields first
        int topLogprobs = OpenAiOptions.topLogprobs(req);
        try (ModelLease lease = core.models().acquire(req.model(), null)) {
            ServedModel model = lease.model();
            OllamaOptions options = OpenAiOptions.options(req, req.maxTokens(), "max_tokens", COMPLETIONS_DEFAULT_MAX_TOKENS, model.parameters());
            GenerationRequest request = new GenerationRequest(prompt, options.sampling(), options.numCtx(), options.numBatch()).withTopLogprobs(topLogprobs);
            respond(ctx, model.submit(request, "prompt", "max_tokens"), Boolean.TRUE.equals(req.stream()), includeUsage(req),
                    new TextReply(model.name(), request.wantsLogprobs()));
        }
    }

    /** {@code prompt}: a string, or an array holding one string. */
    static String prompt(JsonNode p) {
        if (p == null || p.isNull()) throw new BadFieldException("prompt", "prompt is required");
        if (p.isTextual()) return p.asText();
        if (p.isArray() && p.size() == 1 && p.get(0).isTextual()) return p.get(0).asText();
        if (p.isArray() && p.size() != 1) {
            throw new BadFieldException("prompt", "prompt must be a string or an array of exactly one string (one completion per request), got an array of " + p.size());
        }
        throw new BadFieldException("prompt", "prompt must be a string or an array of one string (token arrays are not supported), got "
                + Json.describe(p.isArray() ? p.get(0) : p) + (p.isArray() ? " in the array" : ""));
    }

    private static boolean includeUsage(OpenAiRequests.Sampling r) {
        return r.streamOptions() != null && Boolean.TRUE.equals(r.streamOptions().includeUsage());
    }

    /**
     * {@code response_format}: {@code {"type":"text"}} (or absent) = free text; {@code {"type":"json_object"}} = any JSON
     * object; {@code {"type":"json_schema","json_schema":{"name","schema","strict","description"}}} = output valid
     * against the schema (no schema: any JSON object). Anything else is a 400 naming the field.
     */
    static GrammarNode responseFormat(JsonNode format) {
        if (format == null || format.isNull()) return null;
        if (!format.isObject()) throw new BadFieldException("response_format", "response_format must be an object, got " + Json.describe(format));
        JsonNode type = format.get("type");
        String t = type != null && type.isTextual() ? type.asText() : null;
        if (t == null) throw new BadFieldException("response_format.type", "response_format.type must be \"text\", \"json_object\" or \"json_schema\", got " + Json.describe(type));
        switch (t) {
            case "text" -> { return null; }
            case "json_object" -> { return JsonSchemaGrammar.anyObject(); }
            case "json_schema" -> {
                JsonNode js = format.get("json_schema");
                if (js == null || !js.isObject()) {
                    throw new BadFieldException("response_format.json_schema", "response_format.json_schema must be an object with name and schema, got " + Json.describe(js));
                }
                JsonNode name = js.get("name");
                if (name == null || !name.isTextual() || name.asText().isEmpty()) {
                    throw new BadFieldException("response_format.json_schema.name", "response_format.json_schema.name must be a non-empty string, got " + Json.describe(name));
                }
                JsonNode strict = js.get("strict");
                if (strict != null && !strict.isNull() && !strict.isBoolean()) {
                    throw new BadFieldException("response_format.json_schema.strict", "response_format.json_schema.strict must be a boolean, got " + Json.describe(strict));
                }
                JsonNode schema = js.get("schema");
                if (schema == null || schema.isNull()) return JsonSchemaGrammar.anyObject();
                if (!schema.isObject()) {
                    throw new BadFieldException("response_format.json_schema.schema", "response_format.json_schema.schema must be a JSON schema object, got " + Json.describe(schema));
                }
                try {
                    return JsonSchemaGrammar.compile(schema);
                } catch (dev.forkpoint.InvalidInputException e) {
                    throw new BadFieldException("response_format.json_schema.schema", "response_format.json_schema.schema: " + e.getMessage());
                }
            }
            default -> throw new BadFieldException("response_format.type", "response_format.type must be \"text\", \"json_object\" or \"json_schema\", got \"" + t + "\"");
        }
    }

    // ---- the shared response loop ----

    /** How one endpoint shapes its objects. */
    private sealed interface Reply permits ChatReply, TextReply {
        /** The non-streaming response. */
        ObjectNode whole(GenerationResult r);

        /** Streaming: the chunk sent when generation starts, or null. */
        ObjectNode first();

        /** Streaming: the chunk for a piece of text (and its tokens' log-probabilities), or null when pieces are held back. */
        ObjectNode piece(GenerationEvent.Text text);

        /** Streaming: the last chunks with choices (held-back text, tool calls, the finish reason). */
        List<ObjectNode> last(GenerationResult r);

        /** A chunk with empty choices (for the usage chunk). */
        ObjectNode emptyChunk();
    }

    /** Sends a submitted completion ({@link ServedModel#submit}: 400 / 503 there, before anything is sent). */
    private void respond(Context ctx, Completion completion, boolean stream, boolean includeUsage, Reply reply) throws InterruptedException {
        if (!stream) {
            try (completion) {
                ctx.json(reply.whole(completion.await(ctx)));
            }
            return;
        }
        try (EventStream out = EventStream.sse(ctx, completion)) {
            for (GenerationEvent e; (e = out.next()) != null; ) {
                switch (e) {
                    case GenerationEvent.Started s -> send(out, reply.first(), includeUsage);
                    case GenerationEvent.Text t -> send(out, reply.piece(t), includeUsage);
                    case GenerationEvent.Done d -> {
                        for (ObjectNode chunk : reply.last(d.result())) send(out, chunk, includeUsage);
                        if (includeUsage) {
                            ObjectNode u = reply.emptyChunk();
                            u.set("usage", usage(d.result()));
                            out.send(u);
                        }
                    }
                    case GenerationEvent.Failed f -> {
                        if (f.error() instanceof GenerationCancelledException) throw new ClientGoneException(f.error());
                        out.send(Map.of("error", error(ApiError.of(f.error()))));
                    }
                }
            }
            out.sendRaw("data: [DONE]\n\n");
        }
    }

    private static void send(EventStream out, ObjectNode chunk, boolean includeUsage) {
        if (chunk == null) return;
        if (includeUsage) chunk.putNull("usage");
        out.send(chunk);
    }

    static ObjectNode usage(GenerationResult r) {
        ObjectNode u = F.objectNode();
        int completion = r.generatedIds().length;
        u.put("prompt_tokens", r.promptTokens());
        u.put("completion_tokens", completion);
        u.put("total_tokens", r.promptTokens() + completion);
        u.putObject("prompt_tokens_details").put("cached_tokens", r.cachedTokens());
        return u;
    }

    private static ObjectNode head(String id, String object, String model, long created) {
        ObjectNode n = F.objectNode();
        n.put("id", id);
        n.put("object", object);
        n.put("created", created);
        n.put("model", model);
        n.put("system_fingerprint", "fp_forkpoint");
        return n;
    }

    private static String newId(String prefix) {
        return prefix + UUID.randomUUID().toString().replace("-", "").substring(0, 24);
    }

    /** A chat completion: {@code chat.completion} / {@code chat.completion.chunk} objects. */
    private static final class ChatReply implements Reply {
        private final String id = newId("chatcmpl-");
        private final long created = Instant.now().getEpochSecond();
        private final String model;
        private final ReplyFormat format;
        private final ReplyStream stream;
        private final boolean logprobs;

        ChatReply(String model, ReplyFormat format, boolean logprobs) {
            this.model = model;
            this.format = format;
            this.stream = new ReplyStream(format);
            this.logprobs = logprobs;
        }

        private void logprobs(ObjectNode choice, List<dev.forkpoint.engine.TokenLogprob> entries) {
            if (logprobs) choice.set("logprobs", LogprobJson.openAiChat(entries));
            else choice.putNull("logprobs");
        }

        private static String finish(GenerationResult r, AssistantReply reply) {
            return !reply.toolCalls().isEmpty() ? "tool_calls" : r.doneReason();
        }

        /** The thinking under both names clients read it by (absent when there is none). */
        private static void reasoning(ObjectNode message, String thinking) {
            if (thinking.isEmpty()) return;
            message.put("reasoning_content", thinking);
            message.put("reasoning", thinking);
        }

        public ObjectNode whole(GenerationResult r) {
            AssistantReply reply = format.parse(r.text());
            ObjectNode body = head(id, "chat.completion", model, created);
            ObjectNode choice = body.putArray("choices").addObject();
            choice.put("index", 0);
            ObjectNode message = choice.putObject("message");
            message.put("role", "assistant");
            if (reply.content().isEmpty() && !reply.toolCalls().isEmpty()) message.putNull("content");
            else message.put("content", reply.content());
            reasoning(message, reply.thinking());
            if (!reply.toolCalls().isEmpty()) message.set("tool_calls", toolCalls(reply.toolCalls(), false));
            logprobs(choice, r.logprobs());
            choice.put("finish_reason", finish(r, reply));
            body.set("usage", usage(r));
            return body;
        }

        public ObjectNode first() {
            ObjectNode delta = F.objectNode();
            delta.put("role", "assistant");
            delta.put("content", "");
            return chunk(delta, null);
        }

        public ObjectNode piece(GenerationEvent.Text text) {
            ReplyStream.Delta d = stream.text(text);
            if (d == null) return null;
            return chunk(textDelta(d.thinking(), d.content()), null, d.logprobs());
        }

        private static ObjectNode textDelta(String thinking, String content) {
            ObjectNode delta = F.objectNode();
            delta.put("content", content);
            reasoning(delta, thinking);
            return delta;
        }

        public List<ObjectNode> last(GenerationResult r) {
            ReplyStream.End end = stream.end(r);
            AssistantReply reply = end.reply();
            List<ObjectNode> out = new java.util.ArrayList<>();
            if (!end.thinking().isEmpty() || !end.content().isEmpty() || logprobs && !end.logprobs().isEmpty()) {
                out.add(chunk(textDelta(end.thinking(), end.content()), null, end.logprobs()));   // held-back text, with its tokens
            }
            if (!reply.toolCalls().isEmpty()) {
                ObjectNode delta = F.objectNode();
                delta.set("tool_calls", toolCalls(reply.toolCalls(), true));
                out.add(chunk(delta, null));
            }
            out.add(chunk(F.objectNode(), finish(r, reply)));
            return out;
        }

        public ObjectNode emptyChunk() {
            ObjectNode c = head(id, "chat.completion.chunk", model, created);
            c.putArray("choices");
            return c;
        }

        private ObjectNode chunk(ObjectNode delta, String finishReason) {
            return chunk(delta, finishReason, null);
        }

        /** A chunk; {@code entries} null: no tokens in it ({@code logprobs} null). */
        private ObjectNode chunk(ObjectNode delta, String finishReason, List<dev.forkpoint.engine.TokenLogprob> entries) {
            ObjectNode c = head(id, "chat.completion.chunk", model, created);
            ObjectNode choice = c.putArray("choices").addObject();
            choice.put("index", 0);
            choice.set("delta", delta);
            if (entries == null) choice.putNull("logprobs");
            else logprobs(choice, entries);
            if (finishReason == null) choice.putNull("finish_reason");
            else choice.put("finish_reason", finishReason);
            return c;
        }

        private static ArrayNode toolCalls(List<ToolCall> calls, boolean indexed) {
            ArrayNode out = F.arrayNode();
            for (int i = 0; i < calls.size(); i++) {
                ToolCall c = calls.get(i);
                ObjectNode call = out.addObject();
                if (indexed) call.put("index", i);
                call.put("id", c.id() != null ? c.id() : "call_" + i);
                call.put("type", "function");
                ObjectNode fn = call.putObject("function");
                fn.put("name", c.name());
                fn.put("arguments", Json.write(c.arguments() == null ? F.objectNode() : c.arguments()));
            }
            return out;
        }
    }

    /** A text completion: {@code text_completion} objects, streamed or not. */
    private static final class TextReply implements Reply {
        private final String id = newId("cmpl-");
        private final long created = Instant.now().getEpochSecond();
        private final String model;
        private final boolean logprobs;
        private final int[] offset = {0};   // text_offset of the next token

        TextReply(String model, boolean logprobs) {
            this.model = model;
            this.logprobs = logprobs;
        }

        public ObjectNode whole(GenerationResult r) {
            ObjectNode body = choice(r.text(), r.doneReason(), r.logprobs());
            body.set("usage", usage(r));
            return body;
        }

        public ObjectNode first() { return null; }

        public ObjectNode piece(GenerationEvent.Text text) { return choice(text.piece(), null, text.logprobs()); }

        public List<ObjectNode> last(GenerationResult r) { return List.of(choice("", r.doneReason(), null)); }

        public ObjectNode emptyChunk() {
            ObjectNode c = head(id, "text_completion", model, created);
            c.putArray("choices");
            return c;
        }

        /** {@code entries} null: a chunk without tokens ({@code logprobs} null). */
        private ObjectNode choice(String text, String finishReason, List<dev.forkpoint.engine.TokenLogprob> entries) {
            ObjectNode c = head(id, "text_completion", model, created);
            ObjectNode choice = c.putArray("choices").addObject();
            choice.put("text", text);
            choice.put("index", 0);
            if (logprobs && entries != null) choice.set("logprobs", LogprobJson.openAiCompletion(entries, offset));
            else choice.putNull("logprobs");
            if (finishReason == null) choice.putNull("finish_reason");
            else choice.put("finish_reason", finishReason);
            return c;
        }
    }

    // ---- models ----

    private void embeddings(Context ctx) throws InterruptedException {
        var req = Json.read(ctx, OpenAiRequests.Embeddings.class);
        if (req.input() == null || req.input().isNull()) throw new BadFieldException("input", "input is required");
        List<Embeddings.Input> inputs = Embeddings.inputs(req.input(), "input", true);
        if (inputs.isEmpty()) throw new BadFieldException("input", "input must not be empty");
        for (Embeddings.Input in : inputs) {
            if (in.text() != null && in.text().isEmpty()) throw new BadFieldException(in.field(), in.field() + " must not be an empty string");
            if (in.tokens() != null && in.tokens().length == 0) throw new BadFieldException(in.field(), in.field() + " must not be an empty array");
        }
        String format = req.encodingFormat() == null ? "float" : req.encodingFormat();
        if (!format.equals("float") && !format.equals("base64")) {
            throw new BadFieldException("encoding_format", "encoding_format must be \"float\" or \"base64\", got " + Json.describe(F.textNode(format)));
        }
        try (ModelLease lease = core.models().acquire(req.model(), null)) {
            ServedModel model = lease.model();
            int dimensions = Embeddings.dimensions(req.dimensions(), model, "dimensions");
            Embeddings.Result result = Embeddings.embed(model, inputs,
                    new Embeddings.Settings(0, GenerationRequest.NUM_BATCH_DEFAULT, false, dimensions, true));
            ObjectNode out = F.objectNode();
            out.put("object", "list");
            ArrayNode data = out.putArray("data");
            for (int i = 0; i < result.vectors().size(); i++) {
                float[] v = result.vectors().get(i);
                ObjectNode item = data.addObject();
                item.put("object", "embedding");
                item.put("index", i);
                if (format.equals("base64")) {
                    java.nio.ByteBuffer bytes = java.nio.ByteBuffer.allocate(4 * v.length).order(java.nio.ByteOrder.LITTLE_ENDIAN);
                    for (float x : v) bytes.putFloat(x);
                    item.put("embedding", java.util.Base64.getEncoder().encodeToString(bytes.array()));
                } else {
                    ArrayNode a = item.putArray("embedding");
                    for (float x : v) a.add(x);
                }
            }
            out.put("model", model.name());
            ObjectNode usage = out.putObject("usage");
            usage.put("prompt_tokens", result.promptTokens());
            usage.put("total_tokens", result.promptTokens());
            ctx.json(out);
        }
    }

    private void models(Context ctx) {
        ObjectNode body = F.objectNode();
        body.put("object", "list");
        ArrayNode data = body.putArray("data");
        for (ModelListing l : core.models().available()) data.add(modelObject(l));
        ctx.json(body);
    }

    private void model(Context ctx) {
        String id = ctx.pathParam("id");
        var found = core.models().find(id);   // the same names chat completions accept
        if (found.isPresent()) {
            ctx.json(modelObject(found.get()));
            return;
        }
        throw new ModelNotFoundException("The model '" + id + "' does not exist; GET /v1/models lists the models served");
    }

    private static ObjectNode modelObject(ModelListing l) {
        ObjectNode m = F.objectNode();
        m.put("id", l.name());
        m.put("object", "model");
        m.put("created", l.modified() == null ? 0 : l.modified().getEpochSecond());
        m.put("owned_by", "forkpoint");
        return m;
    }
}
