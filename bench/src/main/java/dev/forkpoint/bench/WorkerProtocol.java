package dev.forkpoint.bench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/**
 * The child side of {@link ChildWorker}'s line protocol, shared by the llama.cpp and Jlama workers: commands on
 * stdin ({@code tokenize TEXT}, {@code run N PROMPT}, {@code rss}, {@code quit}), replies on stdout prefixed with
 * {@link #REPLY} (other stdout lines are a library's chatter).
 */
final class WorkerProtocol {
    static final String REPLY = "@fp ";

    /** What a worker's engine answers. */
    interface Engine {
        /** Prompt tokens of {@code text} without BOS. */
        int tokenCount(String text) throws Exception;

        /** Generates up to {@code maxTokens} from {@code prompt} and replies with its "done …" line. */
        void run(int maxTokens, String prompt) throws Exception;
    }

    private WorkerProtocol() {}

    static void reply(String s) {
        System.out.println(REPLY + s);
        System.out.flush();
    }

    /** Answers commands from stdin until {@code quit} or the end of input. */
    static void serve(Engine engine) throws Exception {
        var in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.startsWith("tokenize ")) {
                reply("tokens " + engine.tokenCount(line.substring("tokenize ".length())));
            } else if (line.startsWith("run ")) {
                String rest = line.substring("run ".length());
                int space = rest.indexOf(' ');
                engine.run(Integer.parseInt(rest.substring(0, space)), rest.substring(space + 1));
            } else if (line.equals("rss")) {
                reply("rss " + ResidentMemory.selfKb());
            } else if (line.equals("quit")) {
                break;
            } else {
                reply("error unknown command: " + line);
            }
        }
    }
}
