package dev.forkpoint.server.ollama;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.chat.AssistantReply;
import dev.forkpoint.chat.ChatMessage;
import dev.forkpoint.chat.ReplyFormat;
import dev.forkpoint.chat.ThinkMode;
import dev.forkpoint.chat.ToolCallFormat;
import dev.forkpoint.chat.ToolDefinition;
import dev.forkpoint.engine.GenerationEvent;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.engine.ModelInfo;
import dev.forkpoint.sampling.structured.GrammarNode;
import dev.forkpoint.sampling.structured.JsonSchemaGrammar;
import dev.forkpoint.server.ApiError;
import dev.forkpoint.server.BadFieldException;
import dev.forkpoint.server.ClientGoneException;
import dev.forkpoint.server.Completion;
import dev.forkpoint.server.ConstrainedReply;
import dev.forkpoint.server.Embeddings;
import dev.forkpoint.server.EventStream;
import dev.forkpoint.server.Json;
import dev.forkpoint.server.LogprobJson;
import dev.forkpoint.server.ModelLease;
import dev.forkpoint.server.ModelListing;
import dev.forkpoint.server.OllamaFormat;
import dev.forkpoint.server.OllamaOptions;
import dev.forkpoint.server.ReplyStream;
import dev.forkpoint.server.ServedModel;
import dev.forkpoint.server.ModelNotFoundException;
import dev.forkpoint.store.ModelStore;
import dev.forkpoint.store.OllamaName;
import dev.forkpoint.server.ServerApi;
import dev.forkpoint.server.ServerCore;
import io.javalin.http.Context;
import io.javalin.http.HandlerType;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Ollama's API with Ollama's field names: {@code GET|HEAD /}, {@code POST /api/generate}, {@code POST /api/chat},
 * {@code GET /api/tags}, {@code POST /api/show}, {@code GET /api/ps}, {@code GET /api/version}. Streaming (the default)
 * is NDJSON; durations are nanoseconds; errors are {@code {"error":"…"}} with 400/401/404/413/500/503, and an error
 * after streaming began is a final {@code {"error":"…"}} line.
 *
 * <p>The final chunk carries Ollama's {@code done_reason} (stop | length), {@code total_duration},
 * {@code load_duration}, {@code prompt_eval_count} (prompt tokens evaluated: reused ones are not counted, as in Ollama),
 * {@code prompt_eval_duration}, {@code eval_count}, {@code eval_duration}, and a Forkpoint extension:
 * <b>{@code prompt_cache_count}</b>, the prompt tokens reused from the prefix cache
 * ({@code prompt_eval_count + prompt_cache_count} = the prompt's tokens).
 *
 * <p>Thinking ({@code think}: true, false, or a level "high" | "medium" | "low" | "max", which means true and reaches the
 * template as {@code reasoning_effort}): absent, a model whose template thinks does so (Ollama's default); the thinking
 * block comes back as {@code message.thinking} ({@code thinking} for generate), streamed as it is generated, and
 * an assistant message's {@code thinking} goes back to the template. Asking a model that cannot think is a 400
 * ({@code "<model>" does not support thinking}), as in Ollama.
 *
 * <p>{@code format}: "json" (any JSON object) or a JSON schema: the output is constrained to it token by token
 * ({@link JsonSchemaGrammar}); a schema keyword that is not supported is a 400 naming it. A constrained reply holds no
 * thinking ({@link dev.forkpoint.server.ConstrainedReply}: rendered with thinking off; {@code think: true} beside a
 * format is a 400).
 *
 * <p>Embeddings ({@link dev.forkpoint.server.Embeddings}): {@code POST /api/embed} ({@code input} a string or an array
 * of strings, {@code truncate} (default true), {@code dimensions}, {@code options}, {@code keep_alive} →
 * {@code {model, embeddings, total_duration, load_duration, prompt_eval_count}}, L2-normalised) and the legacy
 * {@code POST /api/embeddings} ({@code prompt} → {@code {embedding}}, not normalised, as Ollama's legacy route; an
 * empty prompt only loads the model and returns an empty vector; a prompt beyond num_ctx is refused, never cut).
 *
 * <p>Refused with a 400 naming the field rather than ignored: {@code images}, {@code suffix}, {@code template},
 * {@code context}. Model management on the local store ({@code create}, {@code copy}, {@code delete}, blob upload) writes Ollama's
 * layout through {@link ModelStore}; {@code pull} and {@code push} answer 502 at once (no registry is reached).
 */
public final class OllamaApi implements ServerApi {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    private ServerCore core;

    @Override
    public void register(ServerCore core) {
        this.core = core;
        var routes = core.routes(OllamaApi::renderError);
        routes.open(HandlerType.GET, "/", ctx -> ctx.contentType("text/plain; charset=utf-8").result("Ollama is running"));
        routes.open(HandlerType.HEAD, "/", ctx -> ctx.contentType("text/plain; charset=utf-8"));
        routes.post("/api/generate", this::generate);
        routes.post("/api/chat", this::chat);
        routes.get("/api/tags", this::tags);
        routes.post("/api/show", this::show);
        routes.get("/api/ps", this::ps);
        routes.open(HandlerType.GET, "/api/version", ctx -> ctx.json(Map.of("version", core.version())));
        routes.post("/api/embed", this::embed);
        routes.post("/api/embeddings", this::embeddings);
        routes.post("/api/create", this::create);
        routes.post("/api/copy", this::copy);
        routes.delete("/api/delete", this::delete);
        routes.post("/api/pull", ctx -> noRegistry(ctx, "pull"));
        routes.post("/api/push", ctx -> noRegistry(ctx, "push"));
        routes.post("/api/blobs/{digest}", this::putBlob);
        routes.head("/api/blobs/{digest}", ctx -> ctx.status(store().hasBlob(ctx.pathParam("digest")) ? 200 : 404));
    }

    static void renderError(Context ctx, ApiError e) {
        ctx.contentType("application/json").result(Json.write(Map.of("error", e.message())));
    }

    // ---- model management (the local store) ----

    private ModelStore store() {
        return new ModelStore(core.models().storeRoot());
    }

    /**
     * {@code pull} / {@code push}: Forkpoint talks to no registry; answered at once (502) naming the registry rather
     * than attempting a connection.
     */
    private static void noRegistry(Context ctx, String what) {
        JsonNode body = Json.tree(ctx);
        String model = body.path("model").asText(body.path("name").asText(""));
        ctx.status(502).contentType("application/json").result(Json.write(Map.of("error", what + " " + model + ": Forkpoint does not"
                + " reach a model registry (" + OllamaName.DEFAULT_HOST + "); " + (what.equals("pull") ? "pull with Ollama itself into"
                + " the same store, or create the model from a GGUF file with /api/create" : "push with Ollama itself"))));
    }

    /**
     * {@code POST /api/create}: {@code model} plus either Ollama's JSON form ({@code from}, {@code files},
     * {@code template}, {@code system}, {@code parameters}) or the legacy {@code modelfile} string. {@code quantize} is
     * refused. The status lines are sent once the model is written (a failure is a plain 400 / 404 / 500, nothing
     * written).
     */
    private void create(Context ctx) {
        JsonNode req = Json.tree(ctx);
        String name = text(req, "model");
        if (name == null) name = text(req, "name");
        if (name == null || name.isBlank()) throw new BadFieldException("model", "model is required (the name to create)");
        try {
            OllamaName.parse(name);
        } catch (dev.forkpoint.InvalidInputException e) {
            throw new BadFieldException("model", "model: " + e.getMessage());
        }
        String quantize = text(req, "quantize");
        if (quantize != null && !quantize.isEmpty()) {
            throw new BadFieldException("quantize", "quantize is not supported by /api/create; quantise with 'forkpoint convert' and create from its GGUF");
        }
        String from = text(req, "from"), template = text(req, "template"), system = text(req, "system"), blob = null;
        java.util.Map<String, Object> params;
        try {
            params = dev.forkpoint.store.ModelParams.fromJson(req.get("parameters"));
        } catch (dev.forkpoint.InvalidInputException e) {
            throw new BadFieldException("parameters", "parameters: " + e.getMessage());
        }
        JsonNode files = req.get("files");
        if (files != null && !files.isNull()) {
            if (!files.isObject() || files.isEmpty()) throw new BadFieldException("files", "files must be an object of file name → sha256 digest");
            if (files.size() != 1 || !files.fieldNames().next().toLowerCase(java.util.Locale.ROOT).endsWith(".gguf")) {
                throw new BadFieldException("files", "files: Forkpoint creates a model from one .gguf file (safetensors import is not supported), got "
                        + files.size() + " file(s)");
            }
            blob = files.elements().next().asText();
            if (from != null) throw new BadFieldException("from", "give either from or files, not both");
        }
        String modelfile = text(req, "modelfile");
        if (modelfile != null && !modelfile.isBlank()) {
            if (from != null || blob != null) throw new BadFieldException("modelfile", "give either modelfile or from/files, not both");
            dev.forkpoint.store.Modelfile mf;
            try {
                mf = dev.forkpoint.store.Modelfile.parse(modelfile);
                params.putAll(dev.forkpoint.store.ModelParams.fromModelfile(mf.parameters()));
            } catch (dev.forkpoint.InvalidInputException e) {
                throw new BadFieldException("modelfile", "modelfile: " + e.getMessage());
            }
            from = mf.from();
            if (template == null) template = mf.template();
            if (system == null) system = mf.system();
        }
        if (from == null && blob == null) throw new BadFieldException("from", "from is required: a GGUF file on the server, a model in the store, or files");
        if (template != null) {
            try {
                dev.forkpoint.chat.OllamaTemplate.parse(template);
            } catch (dev.forkpoint.InvalidInputException e) {
                throw new BadFieldException("template", "template: " + e.getMessage());
            }
        }
        try {
            OllamaOptions.parse(params);
        } catch (BadFieldException e) {
            throw new BadFieldException("parameters", "parameters: " + e.getMessage());
        }
        List<String> statuses = new ArrayList<>();
        statuses.add("parsing modelfile");
        try {
            store().create(name, new ModelStore.Spec(from, blob, template, system, params), statuses::add);
        } catch (dev.forkpoint.InvalidInputException e) {
            String msg = e.getMessage();
            String field = msg.startsWith("files:") ? "files" : "from";
            throw new BadFieldException(field, msg);
        }
        core.models().forget(OllamaName.parse(name).displayName());
        statuses.add("success");
        management(ctx, req, statuses);
    }

    private void copy(Context ctx) {
        JsonNode req = Json.tree(ctx);
        String source = text(req, "source"), destination = text(req, "destination");
        if (source == null || source.isBlank()) throw new BadFieldException("source", "source is required");
        if (destination == null || destination.isBlank()) throw new BadFieldException("destination", "destination is required");
        try {
            OllamaName.parse(source);
        } catch (dev.forkpoint.InvalidInputException e) {
            throw new BadFieldException("source", "source: " + e.getMessage());
        }
        try {
            store().copy(source, destination);
        } catch (ModelStore.ModelMissingException e) {
            throw new ModelNotFoundException(e.getMessage());
        } catch (dev.forkpoint.InvalidInputException e) {
            throw new BadFieldException("destination", e.getMessage());
        }
        core.models().forget(OllamaName.parse(destination).displayName());
        ctx.status(200);
    }

    /** Deletes the manifest and the blobs no other model uses; a loaded model is unloaded (once its requests end). */
    private void delete(Context ctx) {
        JsonNode req = Json.tree(ctx);
        String name = text(req, "model");
        if (name == null) name = text(req, "name");
        if (name == null || name.isBlank()) throw new BadFieldException("model", "model is required");
        try {
            OllamaName.parse(name);
        } catch (dev.forkpoint.InvalidInputException e) {
            throw new BadFieldException("model", "model: " + e.getMessage());
        }
        String deleted;
        try {
            deleted = store().delete(name);
        } catch (ModelStore.ModelMissingException e) {
            throw new ModelNotFoundException(e.getMessage());
        }
        core.models().forget(deleted);
        ctx.status(200);
    }

    private void putBlob(Context ctx) {
        store().putBlob(ctx.pathParam("digest"), ctx.bodyInputStream());
        ctx.status(201);
    }

    private static void management(Context ctx, JsonNode req, List<String> statuses) {
        boolean stream = !req.path("stream").isBoolean() || req.path("stream").asBoolean();
        if (!stream) {
            ctx.contentType("application/json").result(Json.write(Map.of("status", statuses.getLast())));
            return;
        }
        StringBuilder b = new StringBuilder();
        for (String s : statuses) b.append(Json.write(Map.of("status", s))).append('\n');
        ctx.contentType("application/x-ndjson").result(b.toString());
    }

    private static String text(JsonNode req, String field) {
        JsonNode v = req.get(field);
        if (v == null || v.isNull()) return null;
        if (!v.isTextual()) throw new BadFieldException(field, field + " must be a string, got " + Json.describe(v));
        return v.asText();
    }

    // ---- embeddings ----

    private void embed(Context ctx) throws InterruptedException {
        long t0 = System.nanoTime();
        var req = Json.read(ctx, OllamaRequests.Embed.class);
        List<Embeddings.Input> inputs = Embeddings.inputs(req.input(), "input", false);
        if (inputs.size() == 1 && inputs.getFirst().text().isEmpty() && req.input().isTextual()) inputs = List.of();   // Ollama: "" loads only
        OllamaOptions options = OllamaOptions.parse(req.options());
        Duration keepAlive = KeepAlive.parse(req.keepAlive());
        try (ModelLease lease = core.models().acquire(req.model(), keepAlive)) {
            ServedModel model = lease.model();
            int dimensions = Embeddings.dimensions(req.dimensions(), model, "dimensions");
            boolean truncate = req.truncate() == null || req.truncate();
            Embeddings.Result result = Embeddings.embed(model, inputs,
                    new Embeddings.Settings(options.numCtx(), options.numBatch(), truncate, dimensions, true));
            ObjectNode out = F.objectNode();
            out.put("model", model.name());
            ArrayNode vectors = out.putArray("embeddings");
            for (float[] v : result.vectors()) {
                ArrayNode a = vectors.addArray();
                for (float x : v) a.add(x);
            }
            out.put("total_duration", System.nanoTime() - t0);
            out.put("load_duration", lease.loadNanos());
            out.put("prompt_eval_count", result.promptTokens());
            ctx.json(out);
        }
    }

    private void embeddings(Context ctx) throws InterruptedException {
        var req = Json.read(ctx, OllamaRequests.Embeddings.class);
        OllamaOptions options = OllamaOptions.parse(req.options());
        Duration keepAlive = KeepAlive.parse(req.keepAlive());
        try (ModelLease lease = core.models().acquire(req.model(), keepAlive)) {
            ServedModel model = lease.model();
            ObjectNode out = F.objectNode();
            ArrayNode vector = out.putArray("embedding");
            if (req.prompt() != null && !req.prompt().isEmpty()) {   // Ollama: an empty prompt only loads the model
                Embeddings.Result result = Embeddings.embed(model, List.of(Embeddings.Input.text("prompt", req.prompt())),
                        new Embeddings.Settings(options.numCtx(), options.numBatch(), false, 0, false));
                for (float x : result.vectors().getFirst()) vector.add(x);
            }
            ctx.json(out);
        }
    }

    // ---- generate ----

    private void generate(Context ctx) throws Exception {
        long t0 = System.nanoTime();
        var req = Json.read(ctx, OllamaRequests.Generate.class);
        int topLogprobs = req.engineTopLogprobs();
        GrammarNode grammar = OllamaFormat.grammar(req.format(), "format");
        ThinkMode think = ConstrainedReply.think(think(req.think()), grammar, "think", "format");
        if (req.images() != null && !req.images().isEmpty()) throw new BadFieldException("images", "images are not supported: Forkpoint runs text models only");
        if (req.suffix() != null && !req.suffix().isEmpty()) throw new BadFieldException("suffix", "suffix (fill-in-the-middle) is not supported");
        if (req.template() != null && !req.template().isEmpty()) throw new BadFieldException("template", "template overrides are not supported; the model's own chat template is used (or raw: true)");
        if (req.context() != null && !req.context().isEmpty()) throw new BadFieldException("context", "context (token continuation) is not supported; send the whole text: the prefix cache reuses what was evaluated before");
        OllamaOptions options = OllamaOptions.parse(req.options());
        Duration keepAlive = KeepAlive.parse(req.keepAlive());
        boolean stream = req.stream() == null || req.stream();
        try (ModelLease lease = core.models().acquire(req.model(), keepAlive)) {
            ServedModel model = lease.model();
            options = OllamaOptions.withDefaults(model.parameters(), req.options(), options);
            String prompt = req.prompt() == null ? "" : req.prompt();
            if (prompt.isEmpty() && (req.system() == null || req.system().isEmpty())) {
                // Ollama: an empty prompt only loads (or, with keep_alive 0, unloads) the model
                ObjectNode done = base(model.name());
                done.put("response", "");
                done.put("done", true);
                done.put("done_reason", keepAlive != null && keepAlive.isZero() ? "unload" : "load");
                ctx.json(done);
                return;
            }
            model.requireThinking(think, "think");
            GenerationRequest request;
            ReplyFormat format;
            if (Boolean.TRUE.equals(req.raw())) {
                request = new GenerationRequest(prompt, options.sampling(), options.numCtx(), options.numBatch());
                format = model.chatTemplate().replyFormat(prompt, think, false);
            } else {
                List<ChatMessage> messages = new ArrayList<>();
                if (req.system() != null && !req.system().isEmpty()) messages.add(ChatMessage.of("system", req.system()));
                if (!prompt.isEmpty()) messages.add(ChatMessage.of("user", prompt));
                ServedModel.ChatPrompt chat = model.renderChat(messages, List.of(), options.numCtx(), "prompt", think);
                request = chat.request(options.sampling(), options.numCtx(), options.numBatch(), "");
                format = chat.reply();
            }
            request = request.withTopLogprobs(topLogprobs).withGrammar(grammar);
            format = ConstrainedReply.format(format, grammar, false);
            Shape shape = (chunk, thinking, content, calls) -> {
                chunk.put("response", content);
                if (!thinking.isEmpty()) chunk.put("thinking", thinking);
            };
            respond(ctx, lease, request, stream, t0, format, shape);
        }
    }

    // ---- chat ----

    private void chat(Context ctx) throws Exception {
        long t0 = System.nanoTime();
        var req = Json.read(ctx, OllamaRequests.Chat.class);
        int topLogprobs = req.engineTopLogprobs();
        GrammarNode grammar = OllamaFormat.grammar(req.format(), "format");
        ThinkMode think = ConstrainedReply.think(think(req.think()), grammar, "think", "format");
        if (req.messages() == null) throw new BadFieldException("messages", "messages is required");
        List<ChatMessage> messages = new ArrayList<>();
        for (int i = 0; i < req.messages().size(); i++) messages.add(message(req.messages().get(i), i));
        List<ToolDefinition> tools = new ArrayList<>();
        if (req.tools() != null) {
            for (int i = 0; i < req.tools().size(); i++) tools.add(tool(req.tools().get(i), i));
        }
        OllamaOptions options = OllamaOptions.parse(req.options());
        Duration keepAlive = KeepAlive.parse(req.keepAlive());
        boolean stream = req.stream() == null || req.stream();
        try (ModelLease lease = core.models().acquire(req.model(), keepAlive)) {
            ServedModel model = lease.model();
            options = OllamaOptions.withDefaults(model.parameters(), req.options(), options);
            if (messages.isEmpty()) {   // Ollama: no messages only loads (or unloads) the model
                ObjectNode done = base(model.name());
                done.set("message", assistant(""));
                done.put("done", true);
                done.put("done_reason", keepAlive != null && keepAlive.isZero() ? "unload" : "load");
                ctx.json(done);
                return;
            }
            model.requireThinking(think, "think");
            ServedModel.ChatPrompt chat = model.renderChat(messages, tools, options.numCtx(), "messages", think);
            GenerationRequest request = chat.request(options.sampling(), options.numCtx(), options.numBatch(), "").withTopLogprobs(topLogprobs)
                    .withGrammar(grammar);
            Shape shape = (chunk, thinking, content, calls) -> {
                ObjectNode m = assistant(content);
                if (!thinking.isEmpty()) m.put("thinking", thinking);
                if (!calls.isEmpty()) {
                    ArrayNode array = m.putArray("tool_calls");
                    for (int i = 0; i < calls.size(); i++) {
                        var c = calls.get(i);
                        ObjectNode fn = array.addObject().putObject("function");
                        fn.put("index", i);
                        fn.put("name", c.name());
                        fn.set("arguments", c.arguments() == null ? F.objectNode() : c.arguments());
                    }
                }
                chunk.set("message", m);
            };
            respond(ctx, lease, request, stream, t0, ConstrainedReply.format(chat.reply(), grammar, false), shape);
        }
    }

    private static ChatMessage message(OllamaRequests.Message m, int i) {
        if (m == null) throw new BadFieldException("messages[" + i + "]", "messages[" + i + "] must be an object, got null");
        if (m.role() == null) throw new BadFieldException("messages[" + i + "].role", "messages[" + i + "].role is required");
        if (m.images() != null && !m.images().isEmpty()) {
            throw new BadFieldException("messages[" + i + "].images", "messages[" + i + "].images: images are not supported (text models only)");
        }
        List<dev.forkpoint.chat.ToolCall> calls = new ArrayList<>();
        if (m.toolCalls() != null) {
            for (int j = 0; j < m.toolCalls().size(); j++) {
                var c = m.toolCalls().get(j);
                String at = "messages[" + i + "].tool_calls[" + j + "]";
                if (c == null || c.function() == null || c.function().name() == null) {
                    throw new BadFieldException(at + ".function.name", at + ".function.name is required");
                }
                JsonNode args = c.function().arguments();
                if (args != null && !args.isObject() && !args.isNull()) {
                    throw new BadFieldException(at + ".function.arguments", at + ".function.arguments must be an object, got " + Json.describe(args));
                }
                calls.add(new dev.forkpoint.chat.ToolCall(c.id() != null ? c.id() : "call_" + i + "_" + j, c.function().name(),
                        args == null || args.isNull() ? F.objectNode() : args));
            }
        }
        return new ChatMessage(m.role(), m.content(), calls, null, m.toolName(), m.thinking());
    }

    private static ToolDefinition tool(OllamaRequests.Tool t, int i) {
        String at = "tools[" + i + "]";
        if (t == null || t.function() == null) throw new BadFieldException(at + ".function", at + ".function is required");
        if (t.type() != null && !t.type().equals("function")) {
            throw new BadFieldException(at + ".type", at + ".type must be \"function\", got \"" + t.type() + "\"");
        }
        if (t.function().name() == null || t.function().name().isEmpty()) throw new BadFieldException(at + ".function.name", at + ".function.name is required");
        JsonNode params = t.function().parameters();
        if (params != null && !params.isObject() && !params.isNull()) {
            throw new BadFieldException(at + ".function.parameters", at + ".function.parameters must be an object (a JSON schema), got " + Json.describe(params));
        }
        ObjectNode empty = F.objectNode().put("type", "object");
        empty.putObject("properties");
        return new ToolDefinition(t.function().name(), t.function().description() == null ? "" : t.function().description(),
                params == null || params.isNull() ? empty : params);
    }

    /** {@code think}: absent (the model's default), true, false, or a level ("high", "medium", "low", "max": on). */
    static ThinkMode think(JsonNode think) {
        if (think == null || think.isNull()) return ThinkMode.DEFAULT;
        if (think.isBoolean()) return think.asBoolean() ? ThinkMode.ON : ThinkMode.OFF;
        if (think.isTextual() && THINK_LEVELS.contains(think.asText())) return ThinkMode.level(think.asText());
        throw new BadFieldException("think", "think must be true, false, \"high\", \"medium\", \"low\" or \"max\", got " + Json.describe(think));
    }

    private static final java.util.Set<String> THINK_LEVELS = java.util.Set.of("high", "medium", "low", "max");

    // ---- the shared completion loop ----

    /** How one endpoint puts a reply's parts into a chunk (thinking "" and calls empty when there are none). */
    private interface Shape {
        void put(ObjectNode chunk, String thinking, String content, List<dev.forkpoint.chat.ToolCall> calls);
    }

    private void respond(Context ctx, ModelLease lease, GenerationRequest request, boolean stream, long t0, ReplyFormat format,
                         Shape shape) throws InterruptedException {
        ServedModel model = lease.model();
        Completion completion = model.submit(request);   // 400 / 503 here, before anything is sent
        if (!stream) {
            try (completion) {
                GenerationResult r = completion.await(ctx);
                AssistantReply reply = format.parse(r.text());
                ObjectNode done = base(model.name());
                shape.put(done, reply.thinking(), reply.content(), reply.toolCalls());
                finish(done, r, lease, t0);
                if (request.wantsLogprobs()) done.set("logprobs", LogprobJson.ollama(r.logprobs()));
                ctx.json(done);
            }
            return;
        }
        ReplyStream reply = new ReplyStream(format);
        try (EventStream out = EventStream.ndjson(ctx, completion)) {
            for (GenerationEvent e; (e = out.next()) != null; ) {
                switch (e) {
                    case GenerationEvent.Started s -> { }
                    case GenerationEvent.Text t -> {
                        ReplyStream.Delta d = reply.text(t);
                        if (d != null) {
                            ObjectNode chunk = base(model.name());
                            shape.put(chunk, d.thinking(), d.content(), List.of());
                            chunk.put("done", false);
                            if (!d.logprobs().isEmpty()) chunk.set("logprobs", LogprobJson.ollama(d.logprobs()));
                            out.send(chunk);
                        }
                    }
                    case GenerationEvent.Done d -> {
                        ReplyStream.End end = reply.end(d.result());
                        ObjectNode done = base(model.name());
                        shape.put(done, end.thinking(), end.content(), end.reply().toolCalls());
                        finish(done, d.result(), lease, t0);
                        // entries of text held back (tool parsing, a tag not yet certain) come with it, in the last chunk
                        if (request.wantsLogprobs() && !end.logprobs().isEmpty()) done.set("logprobs", LogprobJson.ollama(end.logprobs()));
                        out.send(done);
                    }
                    case GenerationEvent.Failed f -> {
                        if (f.error() instanceof dev.forkpoint.engine.GenerationCancelledException) throw new ClientGoneException(f.error());
                        out.send(Map.of("error", ApiError.of(f.error()).message()));
                    }
                }
            }
        }
    }

    private static ObjectNode base(String model) {
        ObjectNode n = F.objectNode();
        n.put("model", model);
        n.put("created_at", Instant.now().toString());
        return n;
    }

    private static ObjectNode assistant(String content) {
        ObjectNode m = F.objectNode();
        m.put("role", "assistant");
        m.put("content", content);
        return m;
    }

    private static void finish(ObjectNode done, GenerationResult r, ModelLease lease, long t0) {
        done.put("done", true);
        done.put("done_reason", r.doneReason());
        done.put("total_duration", System.nanoTime() - t0);
        done.put("load_duration", lease.loadNanos());
        done.put("prompt_eval_count", r.evaluatedPromptTokens());
        done.put("prompt_eval_duration", r.promptNanos());
        done.put("eval_count", r.generatedIds().length);
        done.put("eval_duration", r.generationNanos());
        done.put("prompt_cache_count", r.cachedTokens());
    }

    // ---- models ----

    private void tags(Context ctx) {
        ArrayNode models = F.arrayNode();
        for (ModelListing l : core.models().available()) {
            ServedModel loaded = l.loaded() ? loadedModel(l.name()) : null;
            ObjectNode m = models.addObject();
            m.put("name", l.name());
            m.put("model", l.name());
            m.put("modified_at", (l.modified() == null ? Instant.EPOCH : l.modified()).toString());
            m.put("size", l.size());
            String digest = l.digest() != null ? l.digest() : loaded != null ? loaded.digest() : "";
            m.put("digest", digest);
            m.set("details", details(loaded));
        }
        ObjectNode body = F.objectNode();
        body.set("models", models);
        ctx.json(body);
    }

    private ServedModel loadedModel(String name) {
        for (ServedModel s : core.models().loaded()) if (s.name().equals(name)) return s;
        return null;
    }

    private static ObjectNode details(ServedModel loaded) {
        ObjectNode d = F.objectNode();
        d.put("parent_model", "");
        d.put("format", "gguf");
        if (loaded != null) {
            ModelInfo info = loaded.info();
            d.put("family", info.architecture());
            d.putArray("families").add(info.architecture());
            d.put("parameter_size", parameterSize(info.parameterCount()));
            d.put("quantization_level", quantization(info));
        }
        return d;
    }

    private void show(Context ctx) {
        var req = Json.read(ctx, OllamaRequests.Show.class);
        String name = req.model() != null ? req.model() : req.name();
        try (ModelLease lease = core.models().acquire(name, null)) {
            ServedModel s = lease.model();
            ModelInfo info = s.info();
            ObjectNode body = F.objectNode();
            body.put("license", "");
            int numCtx = s.model().defaultNumCtx();   // the context in effect: --num-ctx / OLLAMA_CONTEXT_LENGTH, clamped
            StringBuilder modelfile = new StringBuilder("# Modelfile generated by Forkpoint\nFROM " + s.path() + "\n");
            StringBuilder parameters = new StringBuilder();
            String layerTemplate = s.chatTemplate().ollamaSource();
            if (layerTemplate != null) modelfile.append("TEMPLATE \"\"\"").append(layerTemplate).append("\"\"\"\n");
            if (s.system() != null) modelfile.append("SYSTEM \"\"\"").append(s.system()).append("\"\"\"\n");
            java.util.Map<String, Object> params = new java.util.TreeMap<>(s.parameters());
            params.putIfAbsent("num_ctx", numCtx);
            for (var e : params.entrySet()) {
                List<?> values = e.getValue() instanceof List<?> l ? l : List.of(e.getValue());
                for (Object v : values) {
                    String text = v instanceof String str ? "\"" + str + "\"" : String.valueOf(v);
                    modelfile.append("PARAMETER ").append(e.getKey()).append(' ').append(text).append('\n');
                    if (!parameters.isEmpty()) parameters.append('\n');
                    parameters.append(String.format(Locale.ROOT, "%-30s %s", e.getKey(), text));   // Ollama's layout
                }
            }
            body.put("modelfile", modelfile.toString());
            body.put("parameters", parameters.toString());
            if (s.system() != null) body.put("system", s.system());
            body.put("template", layerTemplate != null ? layerTemplate : info.chatTemplate() == null ? "" : info.chatTemplate());
            body.set("details", details(s));
            ObjectNode mi = body.putObject("model_info");
            String arch = info.architecture();
            mi.put("general.architecture", arch);
            mi.put("general.name", info.name());
            mi.put("general.parameter_count", info.parameterCount());
            mi.put(arch + ".context_length", info.contextLength());
            mi.put(arch + ".embedding_length", info.embeddingLength());
            mi.put(arch + ".block_count", info.layers());
            mi.put(arch + ".attention.head_count", info.heads());
            mi.put(arch + ".attention.head_count_kv", info.kvHeads());
            mi.put("tokenizer.ggml.model", info.tokenizer());
            mi.put("general.file_sha256", info.sha256());
            ArrayNode caps = body.putArray("capabilities").add("completion");
            if (s.chatTemplate().toolCallFormat() != ToolCallFormat.NONE) caps.add("tools");
            if (s.chatTemplate().supportsThinking()) caps.add("thinking");
            body.put("modified_at", Instant.now().toString());
            ctx.json(body);
        }
    }

    private void ps(Context ctx) {
        ArrayNode models = F.arrayNode();
        for (ServedModel s : core.models().loaded()) {
            ObjectNode m = models.addObject();
            m.put("name", s.name());
            m.put("model", s.name());
            long file = s.path().toFile().length();
            m.put("size", file + s.model().kvAllocatedBytes());
            m.put("digest", s.digest());
            m.set("details", details(s));
            Instant expires = core.models().expiresAt(s);
            m.put("expires_at", (expires == null ? Instant.parse("9999-12-31T23:59:59Z") : expires).toString());
            m.put("size_vram", 0);
            m.put("context_length", s.model().defaultNumCtx());
        }
        ObjectNode body = F.objectNode();
        body.set("models", models);
        ctx.json(body);
    }

    static String parameterSize(long n) {
        if (n >= 1_000_000_000L) return String.format(Locale.ROOT, "%.1fB", n / 1e9);
        if (n >= 1_000_000L) return String.format(Locale.ROOT, "%.1fM", n / 1e6);
        if (n >= 1_000L) return String.format(Locale.ROOT, "%.0fK", n / 1e3);
        return Long.toString(n);
    }

    /** The most common tensor type other than F32 (norms are F32 in every file), or F32 for an all-F32 file. */
    private static String quantization(ModelInfo info) {
        String best = "F32";
        int count = 0;
        for (var e : info.tensorTypes().entrySet()) {
            if (!e.getKey().equals("F32") && e.getValue() > count) {
                best = e.getKey();
                count = e.getValue();
            }
        }
        return best;
    }
}
