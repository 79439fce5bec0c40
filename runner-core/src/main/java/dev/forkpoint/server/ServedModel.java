package dev.forkpoint.server;

import dev.forkpoint.chat.ChatMessage;
import dev.forkpoint.chat.ChatTemplate;
import dev.forkpoint.chat.OllamaTemplate;
import dev.forkpoint.chat.RenderedChat;
import dev.forkpoint.chat.ReplyFormat;
import dev.forkpoint.chat.ThinkMode;
import dev.forkpoint.chat.ToolDefinition;
import dev.forkpoint.chat.ChatTokens;
import dev.forkpoint.engine.ContextOverflowException;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.engine.ModelInfo;
import dev.forkpoint.engine.Scheduler;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;

/**
 * A model the server has loaded: the engine's {@link LoadedModel}, the {@link Scheduler} that shares it between
 * requests, its chat template, and what the APIs report about it. {@link #info()} (which hashes the file) is computed
 * once. Requests reach it through a {@link ModelLease} from the {@link ModelRegistry}, which keeps it loaded while used.
 */
public final class ServedModel implements AutoCloseable {
    private final String name;
    private final Path path;
    private final String digest;
    private final LoadedModel model;
    private final Scheduler scheduler;
    private final ChatTemplate template;
    private final ServerMetrics metrics;
    private final Instant loadedAt = Instant.now();
    private final long loadNanos;
    private volatile ModelInfo info;
    private final java.util.Map<String, Object> parameters;
    private final String system;

    ServedModel(String name, Path path, String digest, LoadedModel model, Scheduler scheduler, ServerMetrics metrics, long loadNanos) {
        this(name, path, digest, model, scheduler, metrics, loadNanos, dev.forkpoint.store.ModelStore.Extras.NONE);
    }

    /**
     * {@code extras}: a store model's params layer (defaults under each request's options), SYSTEM (the system
     * message of a chat that has none) and TEMPLATE (used instead of the GGUF's template when it is in the Go-template
     * subset {@link OllamaTemplate} runs; otherwise the GGUF's template is used and the layer ignored).
     */
    ServedModel(String name, Path path, String digest, LoadedModel model, Scheduler scheduler, ServerMetrics metrics, long loadNanos,
                dev.forkpoint.store.ModelStore.Extras extras) {
        this.name = name;
        this.path = path;
        this.digest = digest;
        this.model = model;
        this.scheduler = scheduler;
        this.template = template(extras.template(), model);
        this.parameters = extras.parameters();
        this.system = extras.system();
        this.metrics = metrics;
        this.loadNanos = loadNanos;
    }

    private static ChatTemplate template(String layer, LoadedModel model) {
        if (layer != null) {
            try {
                return ChatTemplate.ollama(OllamaTemplate.parse(layer), model.tokenizer());
            } catch (dev.forkpoint.InvalidInputException e) {
                System.getLogger(ServedModel.class.getName()).log(System.Logger.Level.DEBUG,
                        "the TEMPLATE layer of " + model.path() + " is not in the supported subset (" + e.getMessage() + "); the GGUF's template is used");
            }
        }
        return ChatTemplate.of(model.chatTemplateSource(), model.tokenizer(), model.path());
    }

    /** The params layer of a store model (request options override them); empty when none. */
    public java.util.Map<String, Object> parameters() { return parameters; }

    /** The SYSTEM layer of a store model, or null. */
    public String system() { return system; }

    /** The name the APIs report ("qwen3:0.6b", or the file name for a path given as --model). */
    public String name() { return name; }

    public Path path() { return path; }

    public LoadedModel model() { return model; }

    public Scheduler scheduler() { return scheduler; }

    public ChatTemplate chatTemplate() { return template; }

    public Instant loadedAt() { return loadedAt; }

    /** How long loading took. */
    public long loadNanos() { return loadNanos; }

    /** The model file's sha256 (hex): from the Ollama blob name, or hashed once. */
    public String digest() {
        return digest != null ? digest : info().sha256();
    }

    /** What {@code show} reports; hashes the file on first call, cached afterwards. */
    public ModelInfo info() {
        ModelInfo i = info;
        if (i == null) {
            synchronized (this) {
                if (info == null) {
                    try {
                        info = model.info();
                    } catch (IOException e) {
                        throw new UncheckedIOException("cannot read " + path + ": " + e.getMessage(), e);
                    }
                }
                i = info;
            }
        }
        return i;
    }

    /**
     * Submits a request to this model's scheduler: a bad request throws {@link dev.forkpoint.InvalidInputException}
     * (400), a full queue {@link dev.forkpoint.engine.QueueFullException} (503), both before anything is sent.
     */
    public Completion submit(GenerationRequest request) {
        return submit(request, "prompt", ContextOverflowException.NUM_PREDICT);
    }

    /**
     * {@link #submit(GenerationRequest)} with the API's names for the prompt and for the tokens it asks for: a prompt
     * (plus those tokens) beyond the context is a {@link ContextLengthException} naming them, the one context check of
     * every API (the engine's, on the tokens the request carries).
     */
    public Completion submit(GenerationRequest request, String promptField, String predictField) {
        long start = System.nanoTime();
        try {
            return new Completion(this, scheduler.submit(request), metrics, start);
        } catch (ContextOverflowException e) {
            throw new ContextLengthException(e, promptField, predictField);
        }
    }

    /**
     * The embedding of {@code tokens} ({@link LoadedModel#embed}: pooled, not normalised), computed on this model's
     * scheduler thread between two steps ({@link Scheduler#runBetweenSteps}), so it shares the model with the running
     * generations: they advance a step between any two embeddings.
     */
    public float[] embed(int[] tokens, int numBatch) throws InterruptedException {
        return scheduler.runBetweenSteps(() -> model.embed(tokens, numBatch));
    }

    /**
     * Renders a chat with the model's template and encodes it once, ready to submit: the prompt ends where the
     * assistant's reply begins, and the ends of the messages the engine can use ({@link LoadedModel#forkPointsUsed()}:
     * none on an attention-only model, whose chat is then rendered once) become token boundaries (the prefix cache's
     * fork points). A chat that certainly cannot fit
     * {@code numCtx} tokens (0 = the model's default) is refused before anything is rendered or tokenized
     * ({@link LoadedModel#requirePromptMayFit}), naming {@code messages}.
     */
    public ChatPrompt renderChat(List<ChatMessage> messages, List<ToolDefinition> tools, int numCtx) {
        return renderChat(messages, tools, numCtx, "messages", ThinkMode.DEFAULT);
    }

    /**
     * {@link #renderChat(List, List, int)}, naming {@code field} when the chat cannot fit, with the request's thinking
     * mode (see {@link #requireThinking} for a model that cannot think).
     */
    public ChatPrompt renderChat(List<ChatMessage> messages, List<ToolDefinition> tools, int numCtx, String field, ThinkMode think) {
        int bound = numCtx <= 0 ? model.defaultNumCtx() : Math.min(numCtx, model.config().contextLength());
        long content = 0;
        for (ChatMessage m : messages) content += m.content().length() + m.thinking().length();
        model.requirePromptMayFit(content, bound, field);
        if (tools == null) tools = List.of();
        if (system != null && messages.stream().noneMatch(m -> m.role().equals("system"))) {
            List<ChatMessage> withSystem = new java.util.ArrayList<>(messages.size() + 1);
            withSystem.add(ChatMessage.of("system", system));
            withSystem.addAll(messages);
            messages = withSystem;
        }
        RenderedChat rendered = template.render(messages, tools, true, think, model.forkPointsUsed());
        model.requirePromptMayFit(rendered.prompt().length(), bound, field);
        return new ChatPrompt(rendered.prompt(), template.encode(rendered), template,
                template.replyFormat(rendered.prompt(), think, !tools.isEmpty()));
    }

    /** The chat with the model's default context ({@link #renderChat(List, List, int)} with 0). */
    public ChatPrompt renderChat(List<ChatMessage> messages, List<ToolDefinition> tools) {
        return renderChat(messages, tools, 0);
    }

    /**
     * Refuses (400 naming {@code field}) a request that asks for thinking from a model whose template cannot think, as
     * Ollama does: {@code "<model>" does not support thinking}.
     */
    public void requireThinking(ThinkMode think, String field) {
        if (think != null && think.requested() && !template.supportsThinking()) {
            throw new BadFieldException(field, "\"" + name + "\" does not support thinking (its chat template has no "
                    + dev.forkpoint.chat.ChatTemplate.THINK_OPEN + " block); remove '" + field + "' or turn it off");
        }
    }

    /**
     * A cap of {@code tokens} on the thinking block of {@code chat}'s reply ({@link GenerationRequest#thinkingBudget()}):
     * at the cap the engine writes {@code "\n</think>\n\n"} (as Qwen3's template closes the block) and the model
     * answers; null when the reply has no thinking block to cap.
     */
    public dev.forkpoint.engine.ThinkingBudget thinkingBudget(ChatPrompt chat, int tokens) {
        if (!chat.reply().thinking()) return null;
        int[] close = model.tokenizer().encode("\n" + ChatTemplate.THINK_CLOSE + "\n\n", false, true);
        return new dev.forkpoint.engine.ThinkingBudget(tokens, ChatTemplate.THINK_OPEN, ChatTemplate.THINK_CLOSE, close,
                chat.reply().startsInside());
    }

    /** Unloads: cancels queued work, releases the KV pool and the mapping. */
    @Override
    public void close() {
        try {
            scheduler.close();
        } finally {
            model.close();
        }
    }

    /**
     * A rendered chat, encoded.
     *
     * @param prompt   the raw prompt
     * @param tokens   its tokens and the message ends among them ({@link GenerationRequest#messageBoundaries()})
     * @param template the template
     * @param reply    how the reply is divided into thinking, answer and tool calls
     */
    public record ChatPrompt(String prompt, ChatTokens tokens, ChatTemplate template, ReplyFormat reply) {
        /**
         * The generation request for this chat with the given options (numCtx 0 = default; numBatch per
         * GenerationRequest): it carries the tokens, so the prompt is not encoded again.
         */
        public GenerationRequest request(dev.forkpoint.sampling.SamplingOptions sampling, int numCtx, int numBatch, String cacheSalt) {
            return GenerationRequest.ofTokens(prompt, tokens.tokens(), tokens.boundaries(), sampling, numCtx, numBatch).withCacheSalt(cacheSalt);
        }
    }
}
