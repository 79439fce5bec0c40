package dev.forkpoint.cli;

import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.store.DefaultModel;
import dev.forkpoint.store.ModelResolver;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.Path;

/** {@code --model}: a .gguf path or an Ollama model name; without it, the built-in demo model (with a note). */
final class ModelOption {
    @Option(names = {"-m", "--model"}, paramLabel = "MODEL",
            description = "A .gguf file, a Hugging Face / MLX model folder (config.json, *.safetensors, tokenizer.json), an"
                    + " Ollama model name (qwen3:0.6b, llama3.2, namespace/name:tag; GGUF or safetensors) looked up in"
                    + " $OLLAMA_MODELS (default ~/.ollama/models), or a Hugging Face repository name (org/name) in the"
                    + " Hugging Face cache ($HF_HUB_CACHE, default ~/.cache/huggingface/hub)."
                    + " Default: a built-in demo model with random weights.")
    String model;

    /** The model file or folder to use. */
    Path resolve(CliEnvironment env) {
        if (model == null) {
            env.err().println(DefaultModel.NOTE);
            return DefaultModel.ensure(DefaultModel.cacheDirectory(env.env()));
        }
        return ModelResolver.fromEnvironment(env.env()).resolve(model);
    }

    /** Resolves and loads the model, with a progress bar when stderr is a terminal. */
    LoadedModel load(CliEnvironment env, int threads, boolean debug) throws IOException {
        return load(env, threads, debug, dev.forkpoint.engine.EngineOptions.defaults());
    }

    /** As {@link #load(CliEnvironment, int, boolean)} with the given KV cache options. */
    LoadedModel load(CliEnvironment env, int threads, boolean debug, dev.forkpoint.engine.EngineOptions options) throws IOException {
        Path file = resolve(env);
        long start = System.nanoTime();
        LoadedModel loaded;
        try (var bar = new LoadBar(env.err(), env.stderrIsTerminal())) {
            loaded = LoadedModel.load(file, threads, bar, options);
        }
        if (debug) env.err().printf(java.util.Locale.ROOT, "debug: loaded %s in %.0f ms on backend %s with %d threads%n", file,
                (System.nanoTime() - start) / 1e6, loaded.backendName(), threads);
        return loaded;
    }
}
