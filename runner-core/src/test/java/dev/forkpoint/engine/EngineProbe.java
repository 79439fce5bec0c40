package dev.forkpoint.engine;

import dev.forkpoint.backend.Activation;
import dev.forkpoint.backend.Ops;
import dev.forkpoint.backend.Weight;
import dev.forkpoint.kvcache.CacheStats;


/**
 * Test seam for tests outside this package (the server's): installs, once per model, ops that can
 * <ul>
 *   <li>fail an attention call ({@link FaultyOps}: a backend failure in the middle of a generation),
 *   <li>follow a script: force the logits so that every sequence's next sampled token is the script's next id
 *       (deterministic output of any shape, e.g. a tool call, from a model that would never write it), and
 *   <li>pace each forward pass (so a long generation cannot end before a client's disconnect is noticed);
 * </ul>
 * and evicts the prefix cache. Changes are made under the model's lock, so they take effect between scheduler steps.
 */
public final class EngineProbe {
    private final LoadedModel model;
    private final FaultyOps faults;
    private final ScriptedOps script;

    private EngineProbe(LoadedModel model) {
        this.model = model;
        FaultyOps[] f = new FaultyOps[1];
        ScriptedOps[] s = new ScriptedOps[1];
        model.decorateOps(real -> s[0] = new ScriptedOps(f[0] = new FaultyOps(real)));
        this.faults = f[0];
        this.script = s[0];
    }

    /** Installs the probe on {@code model} (once per model). */
    public static EngineProbe install(LoadedModel model) {
        return new EngineProbe(model);
    }

    /** Throws an injected fault on the k-th attention call from now on (k ≥ 1; one call per layer and pass). */
    public void failAttentionCall(int k) {
        synchronized (model) {
            faults.armAt(k, false);
        }
    }

    /** Attention calls per forward pass: the model's layer count. */
    public int attentionCallsPerPass() {
        return model.config().layers();
    }

    /** From now on, the sampled tokens are {@code ids} in order (then the last one forever); null = the model's own. */
    public void script(int[] ids) {
        script(ids, false);
    }

    /**
     * From now on, the sampled tokens are {@code ids} in order, over and over: a client that sends one request after
     * another, each generating the whole script (ending with an end-of-generation id), gets the same reply each time.
     */
    public void scriptRepeating(int[] ids) {
        script(ids, true);
    }

    private void script(int[] ids, boolean repeat) {
        synchronized (model) {
            script.ids = ids == null ? null : ids.clone();
            script.next = 0;
            script.repeat = repeat;
        }
    }

    /** Sleeps {@code millis} in every forward pass's logits (0 = no pacing). */
    public void pace(long millis) {
        script.paceMillis = millis;
    }

    /** Evicts every unlocked prefix from the cache. */
    public void evictCache() {
        model.cache().evictAll();
    }

    public CacheStats cacheStats() {
        return model.cacheStats();
    }

    /** Ops whose logits follow a script (when set), and paced. */
    private static final class ScriptedOps extends ForwardingOps {
        int[] ids;          // guarded by the model's lock
        int next;
        boolean repeat;
        volatile long paceMillis;

        ScriptedOps(Ops delegate) { super(delegate); }

        public float[][] logits(Activation x, Weight output) {
            float[][] out = delegate.logits(x, output);
            long pace = paceMillis;
            if (pace > 0) {
                try {
                    Thread.sleep(pace);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            if (ids != null) {
                int id = repeat ? ids[next++ % ids.length] : ids[Math.min(next++, ids.length - 1)];
                for (float[] row : out) {
                    float max = Float.NEGATIVE_INFINITY;
                    for (float v : row) max = Math.max(max, v);
                    row[id] = max + 1000f;
                }
            }
            return out;
        }
    }
}
