package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.forkpoint.engine.GenerationRequest;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.tokenizer.Tokenizer;

import java.util.ArrayList;
import java.util.List;

/**
 * What the embedding routes of every API share (Ollama's {@code /api/embed} and {@code /api/embeddings}, OpenAI's
 * {@code /v1/embeddings}): the inputs as texts or token ids, their tokens, the context they must fit, and the vector
 * of each — the loaded model's final hidden states pooled as the model says ({@link LoadedModel#embed}), then
 * L2-normalised (unless the route asks for the raw vector) and cut to the first {@code dimensions} components,
 * renormalised, as Ollama does. Every input is embedded on its own, one after another, on the model's scheduler
 * thread between two of its steps ({@link ServedModel#embed}), so a batch gives exactly the vectors of its inputs sent
 * one by one and running generations advance between any two inputs.
 */
public final class Embeddings {
    private Embeddings() {}

    /** One input: a text (tokenized with the model's BOS/EOS) or token ids used as they are; {@code field} names it. */
    public record Input(String field, String text, int[] tokens) {
        public static Input text(String field, String text) { return new Input(field, text, null); }

        public static Input tokens(String field, int[] tokens) { return new Input(field, null, tokens); }
    }

    /**
     * How to embed: {@code numCtx} (0 = the model's default) bounds each input's tokens; {@code truncate} cuts a longer
     * input to its first num_ctx tokens (false: a 400 naming the input); {@code dimensions} (0 = all) keeps the first N
     * components; {@code normalize} L2-normalises (Ollama's legacy route and nothing else returns the raw vector).
     */
    public record Settings(int numCtx, int numBatch, boolean truncate, int dimensions, boolean normalize) {}

    /** The vectors, one per input in order, and the tokens evaluated for them all. */
    public record Result(List<float[]> vectors, int promptTokens) {}

    /** Reads a {@code dimensions} field: absent or 0 = all; 1 … the model's width; anything else is a 400 naming it. */
    public static int dimensions(Integer dimensions, ServedModel model, String field) {
        if (dimensions == null || dimensions == 0) return 0;
        int dim = model.model().config().dim();
        if (dimensions < 0 || dimensions > dim) {
            throw new BadFieldException(field, field + " must be between 1 and the model's embedding length " + dim + ", got " + dimensions);
        }
        return dimensions;
    }

    /**
     * The inputs of a JSON {@code input} field: a string, an array of strings, an array of token ids or an array of
     * arrays of token ids ({@code tokensAllowed}: OpenAI); null is no input. Anything else is a 400 naming the field.
     */
    public static List<Input> inputs(JsonNode input, String field, boolean tokensAllowed) {
        List<Input> out = new ArrayList<>();
        if (input == null || input.isNull()) return out;
        if (input.isTextual()) {
            out.add(Input.text(field, input.asText()));
            return out;
        }
        String kinds = tokensAllowed ? "a string, an array of strings, an array of token ids or an array of arrays of token ids"
                : "a string or an array of strings";
        if (!input.isArray()) throw new BadFieldException(field, field + " must be " + kinds + ", got " + Json.describe(input));
        if (tokensAllowed && !input.isEmpty() && input.get(0).isIntegralNumber()) {
            out.add(Input.tokens(field, tokenIds(input, field)));
            return out;
        }
        for (int i = 0; i < input.size(); i++) {
            JsonNode item = input.get(i);
            String at = field + "[" + i + "]";
            if (item.isTextual()) out.add(Input.text(at, item.asText()));
            else if (tokensAllowed && item.isArray()) out.add(Input.tokens(at, tokenIds(item, at)));
            else throw new BadFieldException(at, at + " must be " + (tokensAllowed ? "a string or an array of token ids" : "a string")
                    + " (" + field + " is " + kinds + "), got " + Json.describe(item));
        }
        return out;
    }

    private static int[] tokenIds(JsonNode array, String field) {
        int[] ids = new int[array.size()];
        for (int i = 0; i < ids.length; i++) {
            JsonNode id = array.get(i);
            if (!id.isIntegralNumber() || !id.canConvertToInt() || id.asInt() < 0) {
                throw new BadFieldException(field + "[" + i + "]", field + "[" + i + "] must be a token id (an integer ≥ 0), got " + Json.describe(id));
            }
            ids[i] = id.asInt();
        }
        return ids;
    }

    /**
     * Embeds every input: 400 (naming the input) for one without tokens, with a token id outside the vocabulary, or
     * longer than num_ctx when {@code truncate} is false; 400 naming num_ctx / num_batch for a bad one.
     */
    public static Result embed(ServedModel served, List<Input> inputs, Settings settings) throws InterruptedException {
        LoadedModel model = served.model();
        int modelContext = model.config().contextLength();
        int numCtx = settings.numCtx() == 0 ? model.defaultNumCtx() : settings.numCtx();
        if (numCtx < 1 || numCtx > modelContext) {
            throw new BadFieldException("options.num_ctx", "num_ctx must be in [1, " + modelContext + "] (the model's context length), got " + settings.numCtx());
        }
        int numBatch = settings.numBatch() == GenerationRequest.NUM_BATCH_DEFAULT ? Math.min(GenerationRequest.DEFAULT_NUM_BATCH, numCtx) : settings.numBatch();
        if (numBatch < 1 || numBatch > numCtx) {
            throw new BadFieldException("options.num_batch", "num_batch must be in [1, num_ctx=" + numCtx + "], got " + settings.numBatch());
        }
        List<int[]> tokenLists = new ArrayList<>(inputs.size());
        for (Input input : inputs) tokenLists.add(tokens(model, input, numCtx, settings.truncate()));   // every input checked before any runs
        List<float[]> vectors = new ArrayList<>(inputs.size());
        int total = 0;
        for (int[] tokens : tokenLists) {
            float[] v = served.embed(tokens, numBatch);
            total += tokens.length;
            if (settings.normalize()) v = normalize(v);
            if (settings.dimensions() > 0 && settings.dimensions() < v.length) {
                v = java.util.Arrays.copyOf(v, settings.dimensions());
                if (settings.normalize()) v = normalize(v);
            }
            vectors.add(v);
        }
        return new Result(vectors, total);
    }

    /** The tokens an input is embedded with: at most numCtx, cut (keeping a trailing EOS the tokenizer adds) or refused. */
    static int[] tokens(LoadedModel model, Input input, int numCtx, boolean truncate) {
        Tokenizer tokenizer = model.tokenizer();
        int[] tokens;
        if (input.text() != null) {
            String text = input.text();
            long bound = model.promptCharBound(numCtx);
            if (text.length() > bound) {
                if (!truncate) {
                    try {
                        model.requirePromptMayFit(text, numCtx, input.field());
                    } catch (dev.forkpoint.InvalidInputException e) {   // it throws: the field named for every API
                        throw new BadFieldException(input.field(), e.getMessage());
                    }
                }
                // certainly more than numCtx tokens: tokenize only a prefix twice as long as the bound (its first
                // numCtx tokens end well before the cut, so they are those of the whole text)
                text = text.substring(0, (int) Math.min(text.length(), 2 * bound));
            }
            tokens = tokenizer.encode(text, true, true);
        } else {
            tokens = input.tokens();
            int vocab = model.config().vocabSize();
            for (int i = 0; i < tokens.length; i++) {
                if (tokens[i] >= vocab) {
                    throw new BadFieldException(input.field() + "[" + i + "]", input.field() + "[" + i + "] is token id " + tokens[i]
                            + ", outside the model's vocabulary of " + vocab);
                }
            }
        }
        if (tokens.length == 0) throw new BadFieldException(input.field(), input.field() + " has no tokens to embed");
        if (tokens.length > numCtx) {
            if (!truncate) {
                throw new BadFieldException(input.field(), input.field() + " is " + tokens.length + " tokens but num_ctx is " + numCtx
                        + "; shorten it, raise num_ctx, or set truncate to true to embed its first " + numCtx + " tokens");
            }
            boolean endsWithEos = input.text() != null && tokenizer.addsEos() && tokens[tokens.length - 1] == tokenizer.eosId();
            tokens = java.util.Arrays.copyOf(tokens, numCtx);
            if (endsWithEos) tokens[numCtx - 1] = tokenizer.eosId();
        }
        return tokens;
    }

    /** v / ‖v‖₂ (sum of squares in double); a zero vector stays zero; a non-finite component is an internal error. */
    public static float[] normalize(float[] v) {
        double sum = 0;
        for (float x : v) {
            if (!Float.isFinite(x)) throw new IllegalStateException("the model computed a non-finite embedding component (" + x + ")");
            sum += (double) x * x;
        }
        float[] out = new float[v.length];
        if (sum == 0) return out;
        double scale = 1 / Math.sqrt(sum);
        for (int i = 0; i < v.length; i++) out[i] = (float) (v[i] * scale);
        return out;
    }
}
