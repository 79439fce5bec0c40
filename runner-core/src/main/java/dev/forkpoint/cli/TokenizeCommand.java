package dev.forkpoint.cli;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.model.ModelFiles;
import dev.forkpoint.tokenizer.Tokenizer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;

/**
 * {@code forkpoint tokenize}: the token ids of a text with the model's vocabulary, space-separated on one line, or
 * with {@code --pieces} one {@code id<TAB>piece} line per token. Reads only the vocabulary, not the weights: from the
 * model's GGUF file, or with {@code --tokenizer} from Hugging Face tokenizer files alone (tokenizer.json, a tiktoken
 * tokenizer.model, or a model folder).
 */
@Command(name = "tokenize", mixinStandardHelpOptions = true, description = "Print the token ids of a text.")
final class TokenizeCommand implements Callable<Integer> {
    @ParentCommand
    Main main;

    @Mixin
    ModelOption model;

    @Option(names = "--tokenizer", paramLabel = "PATH",
            description = "Hugging Face tokenizer files instead of a model: a tokenizer.json, a tiktoken tokenizer.model,"
                    + " or a folder with tokenizer.json, vocab.json + merges.txt or tokenizer.model (and its configs).")
    Path tokenizerPath;

    @Option(names = "--text", required = true, paramLabel = "TEXT", description = "The text; '-' reads it from stdin.")
    String text;

    @Option(names = "--no-special", description = "Do not add BOS/EOS as the model would.")
    boolean noSpecial;

    @Option(names = "--no-parse-special", description = "Treat special-token text such as <|im_start|> as plain text.")
    boolean noParseSpecial;

    @Option(names = "--pieces", description = "Print each token's piece beside its id, one per line.")
    boolean pieces;

    @Override
    public Integer call() throws IOException {
        CliEnvironment env = main.environment();
        String input = text.equals("-") ? new String(env.in().readAllBytes(), StandardCharsets.UTF_8) : text;
        if (tokenizerPath != null) {
            if (model.model != null) throw new InvalidInputException("give either --model or --tokenizer, not both");
            if (!Files.exists(tokenizerPath)) {
                throw new InvalidInputException("--tokenizer " + tokenizerPath + ": does not exist");
            }
            print(env, Tokenizer.fromPath(tokenizerPath), input);
            return ExitCodes.OK;
        }
        try (ModelFiles files = ModelFiles.open(model.resolve(env))) {   // a GGUF file, a model folder or a manifest
            print(env, files.tokenizer(), input);
        }
        return ExitCodes.OK;
    }

    private void print(CliEnvironment env, Tokenizer tokenizer, String input) {
        int[] ids = tokenizer.encode(input, !noSpecial, !noParseSpecial);
        var out = env.out();
        if (pieces) {
            for (int id : ids) out.println(id + "\t" + escape(tokenizer.piece(id)));
        } else {
            out.println(Arrays.stream(ids).mapToObj(Integer::toString).collect(Collectors.joining(" ")));
        }
        out.flush();
    }

    /** Control characters as escapes, so that every piece stays on its line. */
    static String escape(String piece) {
        var sb = new StringBuilder(piece.length());
        piece.codePoints().forEach(c -> {
            switch (c) {
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                case '\\' -> sb.append("\\\\");
                default -> {
                    if (Character.isISOControl(c)) sb.append(String.format("\\u%04x", c));
                    else sb.appendCodePoint(c);
                }
            }
        });
        return sb.toString();
    }
}
