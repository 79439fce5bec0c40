package dev.forkpoint.server.runner;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.forkpoint.engine.GenerationCancelledException;
import dev.forkpoint.engine.GenerationEvent;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.GenerationResult;
import dev.forkpoint.server.ApiError;
import dev.forkpoint.server.BadFieldException;
import dev.forkpoint.server.ClientGoneException;
import dev.forkpoint.server.Completion;
import dev.forkpoint.server.EventStream;
import dev.forkpoint.server.Json;
import dev.forkpoint.server.ModelLease;
import dev.forkpoint.server.RequestBody;
import dev.forkpoint.server.ServedModel;
import dev.forkpoint.server.ServerApi;
import dev.forkpoint.server.ServerCore;
import io.javalin.http.Context;
import io.javalin.http.HandlerType;
import io.javalin.http.HttpStatus;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * The protocol Ollama speaks to its model runner process, so that Forkpoint can stand in behind an Ollama front: one
 * model (the first {@code --model}, else the store's first), CamelCase JSON.
 * <ul>
 *   <li>{@code GET /v1/status} → {@code {"Status":0,"Progress":100,"ContextLength":N,"Memory":bytes}}
 *   <li>{@code POST /v1/completions} {@code {"Prompt","Media","Options":{snake_case Ollama options},"Logprobs","TopLogprobs",
 *       "Format"}} (Format as Ollama's {@code format}: "json" or a JSON schema; a GBNF "Grammar" is refused)
 *       → JSON Lines {@code {"Content","Done"}} … (with {@code "Logprobs":true} each piece also carries
 *       {@code "Logprobs":[{"token","logprob","top_logprobs":[{"token","logprob"}]}]} for its tokens, Ollama's
 *       {@code llm.Logprob}; TopLogprobs 0–20), last {@code {"Done":true,"DoneReason":0 stop|1 length,
 *       "PromptEvalCount","PromptEvalDuration","EvalCount","EvalDuration"}} (ns). The prompt is raw (the front
 *       applied the template). Errors before streaming: plain text 400/404/503; during: {@code {"Error":{"StatusCode":…,"error":"…"}}}.
 *   <li>{@code POST /v1/tokenize}: the body is plain text → a JSON array of token ids (no BOS/EOS added, special-token
 *       text parsed)
 *   <li>{@code /health} and {@code /completion}: 308 redirects to {@code /v1/status} and {@code /v1/completions}
 * </ul>
 * <b>Dispatch:</b> OpenAI's {@code POST /v1/completions} has the same path. The runner claims only bodies whose
 * top-level object has the CamelCase key {@code "Prompt"} (OpenAI's is {@code "prompt"}); every other body goes to the
 * route registered without a claim (OpenAI's, when that API is installed).
 */
public final class RunnerApi implements ServerApi {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;
    private ServerCore core;

    record CompletionRequest(@JsonProperty("Prompt") String prompt, @JsonProperty("Media") List<JsonNode> media,
                             @JsonProperty("Options") Map<String, Object> options, @JsonProperty("Logprobs") Boolean logprobs,
                             @JsonProperty("TopLogprobs") Integer topLogprobs, @JsonProperty("Format") JsonNode format,
                             @JsonProperty("Grammar") String grammar) {}

    /** Whether a request body is the runner protocol's (CamelCase "Prompt"). */
    public static boolean claims(JsonNode body) {
        return body.isObject() && body.has("Prompt");
    }

    @Override
    public void register(ServerCore core) {
        this.core = core;
        var routes = core.routes((ctx, e) -> ctx.contentType("text/plain; charset=utf-8").result(e.message()));
        routes.get("/v1/status", this::status);
        routes.post("/v1/completions", RunnerApi::claims, this::completion);
        routes.post("/v1/tokenize", this::tokenize);
        routes.open(HandlerType.GET, "/health", ctx -> ctx.redirect("/v1/status", HttpStatus.PERMANENT_REDIRECT));
        routes.post("/completion", ctx -> ctx.redirect("/v1/completions", HttpStatus.PERMANENT_REDIRECT));
    }

    private void status(Context ctx) {
        try (ModelLease lease = core.models().acquireDefault()) {
            ServedModel m = lease.model();
            ObjectNode n = F.objectNode();
            n.put("Status", 0);
            n.put("Progress", 100);
            n.put("ContextLength", m.model().defaultNumCtx());
            n.put("Memory", m.path().toFile().length() + m.model().cacheStats().budgetBytes());
            ctx.json(n);
        }
    }

    private void tokenize(Context ctx) {
        String text = new String(RequestBody.bytes(ctx), StandardCharsets.UTF_8);
        try (ModelLease lease = core.models().acquireDefault()) {
            int[] ids = lease.model().model().tokenizer().encode(text, false, true);
            ctx.contentType("application/json").result(Json.write(ids));
        }
    }

    private void completion(Context ctx) throws InterruptedException {
        var req = Json.read(ctx, CompletionRequest.class);
        if (req.prompt() == null) throw new BadFieldException("Prompt", "Prompt is required");
        if (req.media() != null && !req.media().isEmpty()) throw new BadFieldException("Media", "Media is not supported: Forkpoint runs text models only");
        if (req.grammar() != null && !req.grammar().isEmpty()) {
            throw new BadFieldException("Grammar", "Grammar (GBNF) is not supported; send Format: \"json\" or a JSON schema");
        }
        var format = dev.forkpoint.server.OllamaFormat.grammar(req.format(), "Format");
        int top = req.topLogprobs() == null ? 0 : dev.forkpoint.server.LogprobJson.checkTop("TopLogprobs", req.topLogprobs(), 20);
        int topLogprobs = Boolean.TRUE.equals(req.logprobs()) ? top : GenerationRequest.LOGPROBS_OFF;
        var options = dev.forkpoint.server.OllamaOptions.parse(req.options());
        try (ModelLease lease = core.models().acquireDefault()) {
            GenerationRequest request = new GenerationRequest(req.prompt(), options.sampling(), options.numCtx(), options.numBatch())
                    .withTopLogprobs(topLogprobs).withGrammar(format);
            Completion completion = lease.model().submit(request);
            try (EventStream out = EventStream.ndjson(ctx, completion)) {
                for (GenerationEvent e; (e = out.next()) != null; ) {
                    switch (e) {
                        case GenerationEvent.Started s -> { }
                        case GenerationEvent.Text t -> {
                            ObjectNode c = F.objectNode();
                            c.put("Content", t.piece());
                            c.put("Done", false);
                            if (!t.logprobs().isEmpty()) c.set("Logprobs", dev.forkpoint.server.LogprobJson.runner(t.logprobs()));
                            out.send(c);
                        }
                        case GenerationEvent.Done d -> out.send(done(d.result()));
                        case GenerationEvent.Failed f -> {
                            if (f.error() instanceof GenerationCancelledException) throw new ClientGoneException(f.error());
                            ApiError err = ApiError.of(f.error());
                            ObjectNode c = F.objectNode();
                            ObjectNode inner = c.putObject("Error");
                            inner.put("StatusCode", err.status());
                            inner.put("error", err.message());
                            out.send(c);
                        }
                    }
                }
            }
        }
    }

    private static ObjectNode done(GenerationResult r) {
        ObjectNode c = F.objectNode();
        c.put("Content", "");
        c.put("Done", true);
        c.put("DoneReason", r.doneReason().equals("length") ? 1 : 0);
        c.put("PromptEvalCount", r.evaluatedPromptTokens());
        c.put("PromptEvalDuration", r.promptNanos());
        c.put("EvalCount", r.generatedIds().length);
        c.put("EvalDuration", r.generationNanos());
        return c;
    }
}
