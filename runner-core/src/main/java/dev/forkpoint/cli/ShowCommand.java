package dev.forkpoint.cli;

import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.engine.ModelInfo;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.ParentCommand;

import java.io.IOException;
import java.io.PrintStream;
import java.util.Locale;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;

/** {@code forkpoint show}: what a model is, from its file: architecture, shape, tensor types, tokenizer, digest. */
@Command(name = "show", mixinStandardHelpOptions = true, description = "Describe a model.")
final class ShowCommand implements Callable<Integer> {
    @ParentCommand
    Main main;

    @Mixin
    ModelOption model;

    @Override
    public Integer call() throws IOException {
        CliEnvironment env = main.environment();
        try (LoadedModel loaded = model.load(env, Runtime.getRuntime().availableProcessors(), main.debug())) {
            print(loaded.info(), env.out());
        }
        return ExitCodes.OK;
    }

    static void print(ModelInfo info, PrintStream out) {
        row(out, "architecture", info.architecture());
        row(out, "name", info.name() == null || info.name().isEmpty() ? "(none)" : info.name());
        row(out, "parameters", humanCount(info.parameterCount()) + String.format(Locale.ROOT, " (%,d)", info.parameterCount()));
        row(out, "tensor types", new TreeMap<>(info.tensorTypes()).entrySet().stream()
                .map(e -> e.getKey() + " × " + e.getValue()).collect(Collectors.joining(", ")));
        row(out, "context length", Integer.toString(info.contextLength()));
        row(out, "embedding length", Integer.toString(info.embeddingLength()));
        row(out, "layers", Integer.toString(info.layers()));
        row(out, "attention heads", Integer.toString(info.heads()));
        row(out, "kv heads", Integer.toString(info.kvHeads()));
        row(out, "layer kinds", info.layerKinds());
        if (info.experts() != null) row(out, "experts", info.experts());
        row(out, "kv bytes per token", String.format(Locale.ROOT, "%,d", info.kvBytesPerToken()));
        row(out, "recurrent bytes per sequence", String.format(Locale.ROOT, "%,d", info.recurrentBytesPerSequence()));
        row(out, "backend", info.backend());
        row(out, "tokenizer", info.tokenizer() + " (" + info.vocabSize() + " tokens)");
        String template = info.chatTemplate();
        boolean inline = template == null || template.isEmpty() || (template.length() <= 60 && !template.contains("\n"));
        row(out, "chat template", template == null || template.isEmpty() ? "none"
                : inline ? template : "(below, " + template.length() + " characters)");
        row(out, "file", info.path());
        row(out, "sha256", info.sha256());
        if (!inline) {
            out.println();
            out.println("chat template:");
            template.lines().forEach(l -> out.println("  " + l));
        }
        out.flush();
    }

    private static void row(PrintStream out, String key, String value) {
        out.printf(Locale.ROOT, "  %-30s%s%n", key, value);
    }

    /** 260096 → "260.1K", 1235814400 → "1.24B". */
    static String humanCount(long n) {
        if (n >= 1_000_000_000L) return String.format(Locale.ROOT, "%.2fB", n / 1e9);
        if (n >= 1_000_000L) return String.format(Locale.ROOT, "%.1fM", n / 1e6);
        if (n >= 1_000L) return String.format(Locale.ROOT, "%.1fK", n / 1e3);
        return Long.toString(n);
    }
}
