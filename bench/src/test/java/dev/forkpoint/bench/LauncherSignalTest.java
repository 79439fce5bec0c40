package dev.forkpoint.bench;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 12's defect J, through the real launcher: {@code ./forkpoint serve} runs the JVM as a child (to filter a
 * warning), and SIGTERM to the launcher — what systemd, launchd, docker and supervisors send — must stop that JVM, so
 * the port is free again, with a stream that was in flight ended rather than left hanging. (Runs in the bench module,
 * after runner-core's jar has been packaged.)
 */
class LauncherSignalTest {
    @Test
    @Timeout(180)
    void sigtermToTheLauncherStopsTheServer() throws Exception {
        Path root = Path.of("").toAbsolutePath().getParent();
        Path launcher = root.resolve("forkpoint");
        Assumptions.assumeTrue(Files.isExecutable(launcher), "the launcher is at the project root");
        Assumptions.assumeTrue(Files.isRegularFile(root.resolve("runner-core/target/forkpoint.jar")), "runner-core's jar is built");
        Path model = BenchTestData.shared("models/stories260K.gguf");

        Process p = new ProcessBuilder(launcher.toString(), "serve", "--port", "0", "--threads", "1", "--model", model.toString())
                .redirectError(ProcessBuilder.Redirect.DISCARD).start();
        try {
            var out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            int port = -1;
            Pattern listening = Pattern.compile("listening on http://127\\.0\\.0\\.1:(\\d+)");
            for (String line; port < 0 && (line = out.readLine()) != null; ) {
                Matcher m = listening.matcher(line);
                if (m.find()) port = Integer.parseInt(m.group(1));
            }
            assertTrue(port > 0, "the server said where it listens");
            List<ProcessHandle> jvms = p.toHandle().descendants()
                    .filter(h -> h.info().command().orElse("").endsWith("java")).toList();
            assertEquals(1, jvms.size(), "the launcher runs one JVM as its child");
            ProcessHandle jvm = jvms.getFirst();

            // a long stream in flight
            Socket stream = new Socket("127.0.0.1", port);
            stream.setSoTimeout(30_000);
            byte[] body = "{\"model\":\"stories260K\",\"prompt\":\"Once upon a time\",\"options\":{\"num_predict\":-2}}"
                    .getBytes(StandardCharsets.UTF_8);
            OutputStream o = stream.getOutputStream();
            o.write(("POST /api/generate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: "
                    + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            o.write(body);
            o.flush();
            var in = new BufferedReader(new InputStreamReader(stream.getInputStream(), StandardCharsets.UTF_8));
            assertTrue(in.readLine().startsWith("HTTP/1.1 200"), "the stream started");

            p.destroy();   // SIGTERM to the launcher
            assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the launcher exits");
            Optional<Boolean> alive = Optional.of(jvm.isAlive());
            for (int i = 0; i < 100 && jvm.isAlive(); i++) Thread.sleep(100);
            assertFalse(jvm.isAlive(), "the JVM stopped with the launcher (it was alive: " + alive.get() + ")");
            assertEquals(143, p.exitValue(), "the JVM's status for SIGTERM, passed on by the launcher");

            // the stream ended (end of input or a reset), it does not hang
            try {
                while (in.readLine() != null) { }
            } catch (java.io.IOException reset) {
                // a reset is an end too
            }
            stream.close();
            int freePort = port;
            assertThrows(ConnectException.class, () -> new Socket("127.0.0.1", freePort).close(), "the port is free");
        } finally {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
        }
    }
}
