package dev.forkpoint.bench;

import picocli.CommandLine.Command;
import picocli.CommandLine.Unmatched;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code forkpoint bench jmh [JMH args]}: hands every argument to JMH's own command line (try {@code -h}, {@code -l}). */
@Command(name = "jmh", description = "Run the JMH benchmarks in this jar; all arguments go to JMH (-l lists them, -h helps).")
final class JmhCommand implements Callable<Integer> {
    @Unmatched
    List<String> args = new ArrayList<>();

    @Override
    public Integer call() throws Exception {
        org.openjdk.jmh.Main.main(args.toArray(String[]::new));
        return 0;
    }
}
