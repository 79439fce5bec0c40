package dev.forkpoint.bench.soak;

import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The seeded mix of what client streams do: with probability {@code faultRate} an injected fault (uniform over the
 * enabled faults that apply to the API, the two slow stalls at a fifth of the weight; faults put in quarantine, because
 * they wedged the server in the fault matrix, are skipped), with {@code disconnectRate} a request whose client goes
 * away (streamed: after 1–1500 body bytes; whole: after 20–500 ms), with {@code referenceRate} a greedy reference
 * request, else a well-formed request over a random API, streamed or not, of 1–{@code maxTokens} tokens at a random
 * temperature. Prompts are a few common words, half of them after a shared opening sentence (so the prefix cache is
 * used and evicted).
 */
final class ActionMix {
    private static final String[] WORDS = ("the a little girl boy dog cat sun tree park ball happy sad big small red blue went saw played ran jumped "
            + "found said friend mom dad home day night toy box bird fish water sky flower house car book cake tall funny kind brave").split(" ");
    private static final String SHARED = "Once upon a time, in a small town, there lived a kind old man who loved to tell stories.";

    private final List<Fault> faults;
    private final double faultRate, disconnectRate, referenceRate;
    private final int maxTokens;
    private final int references;
    private final boolean keyed;
    private final Set<Fault> quarantined = ConcurrentHashMap.newKeySet();

    ActionMix(List<Fault> faults, double faultRate, double disconnectRate, double referenceRate, int maxTokens, int references, boolean keyed) {
        this.faults = List.copyOf(faults);
        this.faultRate = faultRate;
        this.disconnectRate = disconnectRate;
        this.referenceRate = referenceRate;
        this.maxTokens = maxTokens;
        this.references = references;
        this.keyed = keyed;
    }

    void quarantine(Fault f) { quarantined.add(f); }

    Set<Fault> quarantined() { return Set.copyOf(quarantined); }

    Action next(Random rng) {
        double x = rng.nextDouble();
        Api api = Api.values()[rng.nextInt(Api.values().length)];
        if (x < faultRate) {
            Fault f = pickFault(rng, api);
            if (f != null) return new Action.Inject(f, api, rng.nextInt(f.variants));
        } else if (x < faultRate + disconnectRate) {
            boolean stream = rng.nextBoolean();
            ReadPlan drop = stream ? new ReadPlan.DropAfterBytes(1 + rng.nextInt(1500)) : new ReadPlan.DropAfter(Duration.ofMillis(20 + rng.nextInt(481)));
            return new Action.Disconnect(api, stream, prompt(rng), Math.max(1, maxTokens / 2 + rng.nextInt(Math.max(1, maxTokens / 2 + 1))),
                    rng.nextDouble(), rng.nextLong(), drop);
        } else if (x < faultRate + disconnectRate + referenceRate && references > 0) {
            return new Action.Reference(rng.nextInt(references));
        }
        return new Action.Complete(api, rng.nextBoolean(), prompt(rng), 1 + rng.nextInt(maxTokens), rng.nextDouble(), rng.nextLong());
    }

    private Fault pickFault(Random rng, Api api) {
        double total = 0;
        for (Fault f : faults) if (usable(f, api)) total += weight(f);
        if (total == 0) return null;
        double y = rng.nextDouble() * total;
        for (Fault f : faults) {
            if (!usable(f, api)) continue;
            y -= weight(f);
            if (y < 0) return f;
        }
        return null;
    }

    private boolean usable(Fault f, Api api) { return f.applies(api, keyed) && !quarantined.contains(f); }

    private static double weight(Fault f) { return f.slow() ? 0.2 : 1.0; }

    static String prompt(Random rng) {
        StringBuilder sb = new StringBuilder();
        if (rng.nextBoolean()) sb.append(SHARED).append(' ');
        int n = 3 + rng.nextInt(28);
        for (int i = 0; i < n; i++) sb.append(i == 0 ? "" : " ").append(WORDS[rng.nextInt(WORDS.length)]);
        return sb.toString();
    }
}
