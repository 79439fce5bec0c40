package dev.forkpoint.fuzz;

import java.util.List;
import java.util.Optional;

/**
 * Every {@code @FuzzTest} of the suite under a short name, for {@code forkpoint bench fuzz} (which runs them in
 * Jazzer's fuzzing mode) and for its README table. {@code FuzzTargetsTest} checks that the list and the test classes
 * agree, so a new fuzz test cannot be left out.
 */
public final class FuzzTargets {
    /** One fuzz test: {@code name} for the command line, the test class and method, and what it fuzzes. */
    public record Target(String name, String className, String method, String description) {
        /** The class's package as a resource path plus {@code <SimpleName>Inputs/<method>}: the seed corpus folder. */
        public String inputsPath() {
            int dot = className.lastIndexOf('.');
            return className.substring(0, dot).replace('.', '/') + "/" + className.substring(dot + 1) + "Inputs/" + method;
        }
    }

    public static final List<Target> ALL = List.of(
            new Target("gguf", "dev.forkpoint.format.gguf.GgufFuzzTest", "parse", "GGUF bytes through the reader and every metadata accessor"),
            new Target("safetensors", "dev.forkpoint.format.safetensors.SafetensorsFuzzTest", "parse", "safetensors bytes through the reader"),
            new Target("shard-index", "dev.forkpoint.format.safetensors.SafetensorsFuzzTest", "shardIndex", "model.safetensors.index.json over two shards"),
            new Target("gguf-model", "dev.forkpoint.engine.ModelLoadFuzzTest", "ggufModel", "a tiny GGUF model with fuzzed metadata and tensors, loaded and run"),
            new Target("config-json", "dev.forkpoint.engine.ModelLoadFuzzTest", "hfConfig", "config.json of a Hugging Face folder, loaded and run"),
            new Target("tokenizer-json", "dev.forkpoint.tokenizer.TokenizerFuzzTest", "tokenizerJson", "tokenizer.json alone"),
            new Target("tokenizer-config", "dev.forkpoint.tokenizer.TokenizerFuzzTest", "tokenizerConfig", "tokenizer_config.json beside a tokenizer.json"),
            new Target("tokenize", "dev.forkpoint.tokenizer.TokenizerFuzzTest", "encodeDecode", "text on the real vocabularies of ../shared"),
            new Target("chat-template", "dev.forkpoint.chat.ChatTemplateFuzzTest", "template", "Jinja chat template sources"),
            new Target("chat-messages", "dev.forkpoint.chat.ChatTemplateFuzzTest", "messages", "messages and tools on public models' templates, replies"),
            new Target("thinking", "dev.forkpoint.chat.ChatTemplateFuzzTest", "thinkingReply", "model output with <think> blocks, cut into pieces"),
            new Target("ollama", "dev.forkpoint.server.ollama.OllamaRequestsFuzzTest", "request", "Ollama request bodies and options"),
            new Target("openai", "dev.forkpoint.server.openai.OpenAiRequestsFuzzTest", "request", "OpenAI request bodies, messages and options"),
            new Target("anthropic", "dev.forkpoint.server.anthropic.AnthropicRequestsFuzzTest", "request", "Anthropic request bodies, blocks and tools"),
            new Target("runner", "dev.forkpoint.server.runner.RunnerRequestsFuzzTest", "request", "Ollama runner protocol bodies"),
            new Target("sampler", "dev.forkpoint.sampling.SamplerFuzzTest", "sample", "sampling options, logits (NaN, infinities) and history"),
            new Target("json-schema", "dev.forkpoint.sampling.structured.SchemaGrammarFuzzTest", "compileAndMatch", "JSON schemas and patterns compiled to grammars, matched and masked"),
            new Target("stop-strings", "dev.forkpoint.sampling.SamplerFuzzTest", "stops", "stop strings over text pieces, against the contract"),
            new Target("server", "dev.forkpoint.server.ServerFuzzTest", "request", "requests to a live server on all four APIs: never a 500"),
            new Target("generation", "dev.forkpoint.engine.GenerationFuzzTest", "request", "generation requests on stories260K with an evicting cache"));

    private FuzzTargets() {}

    /** The target of that name, or of that {@code Class#method} / {@code SimpleClass#method}. */
    public static Optional<Target> named(String name) {
        return ALL.stream().filter(t -> t.name().equals(name) || (t.className() + "#" + t.method()).equals(name)
                || (t.className().substring(t.className().lastIndexOf('.') + 1) + "#" + t.method()).equals(name)).findFirst();
    }
}
