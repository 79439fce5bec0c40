package dev.forkpoint.server;

import dev.forkpoint.InvalidInputException;
import dev.forkpoint.engine.LoadProgress;
import dev.forkpoint.engine.LoadedModel;
import dev.forkpoint.engine.Scheduler;
import dev.forkpoint.engine.SchedulerOptions;
import dev.forkpoint.store.DefaultModel;
import dev.forkpoint.store.ModelResolver;
import dev.forkpoint.store.ModelStore;
import dev.forkpoint.store.OllamaName;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The models a server serves, by name, each with one {@link Scheduler}. Two modes:
 * <ul>
 *   <li><b>pinned</b> ({@code --model} given): those models, loaded at construction, never unloaded. A model answers to
 *       the name given, its file name, the file name without {@code .gguf}, each also with {@code :latest}
 *       (case-insensitive); it is reported by its Ollama name, or its file name for a path.
 *   <li><b>store</b> (no {@code --model}): the local Ollama store's models, loaded on a request's first use and unloaded
 *       once unused for their keep-alive (the request's {@code keep_alive}, else the server's default; 0 = right after
 *       the request, negative = never); when the store is empty, the built-in demo model as {@value #DEFAULT_NAME}.
 * </ul>
 * A name that is not served throws {@link ModelNotFoundException} (404) listing what is.
 */
public final class ModelRegistry implements AutoCloseable {
    public static final String DEFAULT_NAME = "forkpoint-default:latest";
    private static final System.Logger LOG = System.getLogger(ModelRegistry.class.getName());

    private final ServerConfig config;
    private final ServerMetrics metrics;
    private final ModelResolver resolver;
    private final boolean pinned;
    private final Map<String, Entry> entries = new ConcurrentHashMap<>();   // by canonical name
    private final java.util.Set<Entry> retiring = ConcurrentHashMap.newKeySet();   // forgotten while in use, still loaded
    private final Map<String, String> aliases = new LinkedHashMap<>();      // pinned: lower-case alias → canonical
    private final ScheduledExecutorService reaper;
    private final ReentrantLock loading = new ReentrantLock();   // with max_loaded_models: making room and loading

    private static final class Entry {
        final String name;
        final Path path;
        final String digest;
        final ReentrantLock lock = new ReentrantLock();
        ServedModel served;
        int users;
        long expiresAt = Long.MAX_VALUE;   // nanoTime
        long lastUsed;                     // nanoTime of the last release
        boolean retired;                   // deleted or replaced in the store: unloaded when its last user leaves

        Entry(String name, Path path, String digest) {
            this.name = name;
            this.path = path;
            this.digest = digest;
        }
    }

    ModelRegistry(ServerConfig config, ServerMetrics metrics) {
        this.config = config;
        this.metrics = metrics;
        this.resolver = ModelResolver.fromEnvironment(config.env());
        this.pinned = !config.models().isEmpty();
        if (pinned) {
            try {
                for (String m : config.models()) pin(m);
            } catch (RuntimeException | Error e) {
                close();
                throw e;
            }
            reaper = null;
        } else {
            reaper = Executors.newSingleThreadScheduledExecutor(r -> Thread.ofPlatform().name("forkpoint-keepalive").daemon().unstarted(r));
            reaper.scheduleWithFixedDelay(this::reap, 1, 1, TimeUnit.SECONDS);
        }
    }

    /** Whether the models were given with --model (loaded at startup, never unloaded). */
    public boolean pinned() { return pinned; }

    private void pin(String given) {
        Path path = resolver.resolve(given);
        boolean isPath = ModelResolver.looksLikePath(given);
        boolean inStore = path.toAbsolutePath().normalize().startsWith(resolver.store().toAbsolutePath().normalize());
        String file = path.getFileName().toString();
        // An Ollama name resolves into the store (a GGUF blob or a safetensors manifest); a Hugging Face repository
        // name to a cache snapshot folder.
        String name = isPath ? file : inStore ? OllamaName.parse(given).displayName() : given;
        if (entries.containsKey(name)) throw new InvalidInputException("--model " + given + " is given twice (as " + name + ")");
        Entry e = new Entry(name, path, blobDigest(path));
        entries.put(name, e);
        String stem = file.toLowerCase(Locale.ROOT).endsWith(".gguf") ? file.substring(0, file.length() - 5) : file;
        for (String a : List.of(name, given, file, stem)) {
            aliases.putIfAbsent(a.toLowerCase(Locale.ROOT), name);
            if (!a.contains(":")) aliases.putIfAbsent(a.toLowerCase(Locale.ROOT) + ":latest", name);
        }
        e.lock.lock();
        try {
            load(e);
        } finally {
            e.lock.unlock();
        }
    }

    /**
     * Holds the model {@code name}, loading it first if needed. {@code keepAlive}: how long it stays loaded after this
     * request (null = the server's default; 0 = unloaded right after; negative = forever); ignored for pinned models.
     */
    public ModelLease acquire(String name, Duration keepAlive) {
        if (name == null || name.isBlank()) throw new BadFieldException("model", "model is required");
        String pinnedDigest = null;
        int at = name.indexOf('@');
        if (at >= 0) {   // "name@sha256:<hex>": the model must be exactly that one
            pinnedDigest = name.substring(at + 1).toLowerCase(Locale.ROOT);
            if (!pinnedDigest.matches("sha256:[0-9a-f]{64}")) {
                throw new BadFieldException("model", "model '" + name + "': a digest must be sha256: followed by 64 hex digits");
            }
            name = name.substring(0, at);
        }
        Entry e = entry(name);
        Duration keep = keepAlive == null ? config.keepAlive() : keepAlive;
        e.lock.lock();
        long loadNanos = 0;
        try {
            if (e.served == null) loadNanos = loadWithin(e);
            e.users++;
        } finally {
            e.lock.unlock();
        }
        ServedModel served = e.served;
        ModelLease lease = new ModelLease(served, loadNanos, () -> release(e, keep));
        if (pinnedDigest != null && !pinnedDigest.equals("sha256:" + served.digest())) {
            lease.close();
            throw new ModelNotFoundException("model '" + name + "' is sha256:" + served.digest() + ", not the " + pinnedDigest + " asked for");
        }
        return lease;
    }

    /**
     * The listing of the model {@code name} answers to (every alias and spelling {@link #acquire} accepts, a digest
     * suffix ignored), without loading it; empty when no model answers to it.
     */
    public java.util.Optional<ModelListing> find(String name) {
        if (name == null || name.isBlank()) return java.util.Optional.empty();
        int at = name.indexOf('@');
        String bare = at >= 0 ? name.substring(0, at) : name;
        String canonical;
        if (pinned) {
            canonical = aliases.get(bare.toLowerCase(Locale.ROOT));
        } else {
            try {
                canonical = OllamaName.parse(bare).displayName();
            } catch (InvalidInputException ex) {
                return java.util.Optional.empty();
            }
        }
        if (canonical == null) return java.util.Optional.empty();
        for (ModelListing l : available()) if (l.name().equalsIgnoreCase(canonical)) return java.util.Optional.of(l);
        return java.util.Optional.empty();
    }

    /** The model a single-model protocol (the runner) serves: the first --model, else the store's first model. */
    public ModelLease acquireDefault() {
        if (pinned) return acquire(config.models().getFirst(), null);
        List<ModelListing> list = available();
        if (list.isEmpty()) throw new ModelNotFoundException("no model to serve");
        return acquire(list.getFirst().name(), null);
    }

    /** The loaded models now. */
    public List<ServedModel> loaded() {
        List<ServedModel> out = new ArrayList<>();
        List<Entry> all = new ArrayList<>(entries.values());
        all.addAll(retiring);
        for (Entry e : all) {
            ServedModel s = e.served;
            if (s != null) out.add(s);
        }
        out.sort(java.util.Comparator.comparing(ServedModel::name));
        return out;
    }

    /** When a loaded model unloads if unused, or null when never (pinned, or keep_alive negative, or in use). */
    public Instant expiresAt(ServedModel model) {
        Entry e = entries.get(model.name());
        if (e == null || pinned || e.users > 0 || e.expiresAt == Long.MAX_VALUE) return null;
        return Instant.now().plusNanos(e.expiresAt - System.nanoTime());
    }

    /** Every model a request may name, sorted by name. */
    public List<ModelListing> available() {
        List<ModelListing> out = new ArrayList<>();
        if (pinned) {
            for (Entry e : entries.values()) out.add(listing(e.name, e.path, true));
        } else {
            for (String name : resolver.available()) {
                Path path;
                try {
                    path = resolver.resolveName(OllamaName.parse(name));
                } catch (InvalidInputException ex) {
                    continue;   // safetensors-only or broken manifests are not servable
                }
                Entry e = entries.get(name);
                out.add(listing(name, path, e != null && e.served != null));
            }
            if (out.isEmpty()) {
                Entry e = entries.get(DEFAULT_NAME);
                Path p = DefaultModel.cacheDirectory(config.env()).resolve(DefaultModel.FILE_NAME);
                out.add(listing(DEFAULT_NAME, p, e != null && e.served != null));
            }
        }
        out.sort(java.util.Comparator.comparing(ModelListing::name));
        return out;
    }

    private ModelListing listing(String name, Path path, boolean loaded) {
        long size = -1;
        Instant modified = null;
        try {
            if (Files.exists(path)) {
                size = Files.size(path);
                modified = Files.getLastModifiedTime(path).toInstant();
            }
        } catch (IOException ignored) {
            // reported as unknown
        }
        return new ModelListing(name, path, size, modified, blobDigest(path), loaded);
    }

    private Entry entry(String name) {
        if (pinned) {
            String canonical = aliases.get(name.toLowerCase(Locale.ROOT));
            if (canonical == null) throw notFound(name);
            return entries.get(canonical);
        }
        String canonical;
        try {
            canonical = OllamaName.parse(name).displayName();
        } catch (InvalidInputException ex) {
            throw notFound(name);
        }
        Entry existing = entries.get(canonical);
        if (existing != null) return existing;
        List<String> available = resolver.available();
        for (String a : available) {
            if (a.equalsIgnoreCase(canonical)) {
                Path path = resolver.resolveName(OllamaName.parse(a));
                return entries.computeIfAbsent(a, n -> new Entry(n, path, blobDigest(path)));
            }
        }
        if (canonical.equals(DEFAULT_NAME) && available().stream().anyMatch(l -> l.name().equals(DEFAULT_NAME))) {
            return entries.computeIfAbsent(DEFAULT_NAME, n ->
                    new Entry(n, DefaultModel.ensure(DefaultModel.cacheDirectory(config.env())), null));
        }
        throw notFound(name);
    }

    private ModelNotFoundException notFound(String name) {
        List<String> names = available().stream().map(ModelListing::name).toList();
        return new ModelNotFoundException("model '" + name + "' not found" + (names.isEmpty() ? "" : "; available: " + String.join(", ", names)));
    }

    /**
     * Loads e (lock held) in store mode: with max_loaded_models, first unloads the idle models used least recently
     * until one more fits; when every loaded model is in use, refuses (503) naming the limit.
     */
    private long loadWithin(Entry e) {
        int max = config.maxLoadedModels();
        if (pinned || max == 0) return load(e);
        loading.lock();
        try {
            while (true) {
                List<Entry> loaded = new ArrayList<>();
                for (Entry o : entries.values()) if (o != e && o.served != null) loaded.add(o);
                if (loaded.size() < max) return load(e);
                loaded.sort(java.util.Comparator.comparingLong(o -> o.lastUsed));
                boolean freed = false;
                for (Entry victim : loaded) {
                    if (!victim.lock.tryLock()) continue;
                    try {
                        if (victim.served != null && victim.users == 0) {
                            LOG.log(System.Logger.Level.INFO, "unloading " + victim.name + " to load " + e.name + " (max_loaded_models " + max + ")");
                            unload(victim);
                            freed = true;
                        }
                    } finally {
                        victim.lock.unlock();
                    }
                    if (freed) break;
                }
                if (!freed) {
                    throw new dev.forkpoint.engine.QueueFullException("server busy: " + loaded.size() + " models are loaded and in use,"
                            + " the most max_loaded_models (--max-loaded-models / OLLAMA_MAX_LOADED_MODELS) allows; " + e.name
                            + " cannot be loaded until one is idle; retry after 1 s", 1);
                }
            }
        } finally {
            loading.unlock();
        }
    }

    /** Loads e (lock held); returns the nanoseconds it took. */
    private long load(Entry e) {
        long t0 = System.nanoTime();
        LoadedModel model;
        try {
            model = LoadedModel.load(e.path, config.threads(), LoadProgress.NONE, config.engine());
        } catch (IOException ex) {
            throw new UncheckedIOException("cannot load " + e.path + ": " + ex.getMessage(), ex);
        }
        Scheduler scheduler;
        try {
            scheduler = new Scheduler(model, config.schedulerOptions());
        } catch (RuntimeException | Error ex) {
            model.close();
            throw ex;
        }
        long nanos = System.nanoTime() - t0;
        ModelStore.Extras extras = ModelStore.Extras.NONE;
        if (e.path.toAbsolutePath().normalize().startsWith(resolver.store().toAbsolutePath().normalize())) {
            try {
                extras = ModelStore.extras(resolver.store(), OllamaName.parse(e.name));
            } catch (InvalidInputException ignored) {
                // a file name, not a store name
            }
        }
        try {
            e.served = new ServedModel(e.name, e.path, e.digest, model, scheduler, metrics, nanos, extras);
        } catch (RuntimeException | Error ex) {
            scheduler.close();
            model.close();
            throw ex;
        }
        LOG.log(System.Logger.Level.INFO, String.format(Locale.ROOT, "loaded %s (%s) in %.0f ms", e.name, e.path, nanos / 1e6));
        if (model.numCtxClamped()) {
            LOG.log(System.Logger.Level.WARNING, "num_ctx " + model.requestedNumCtx() + " (--num-ctx / OLLAMA_CONTEXT_LENGTH) is more than "
                    + e.name + "'s trained context of " + model.config().contextLength() + " tokens; its default num_ctx is "
                    + model.defaultNumCtx());
        }
        return nanos;
    }

    private void release(Entry e, Duration keep) {
        e.lock.lock();
        try {
            e.users--;
            e.lastUsed = System.nanoTime();
            if (pinned) return;
            e.expiresAt = keep.isNegative() ? Long.MAX_VALUE : System.nanoTime() + keep.toNanos();
            if (e.users == 0 && (keep.isZero() || e.retired)) unload(e);
        } finally {
            e.lock.unlock();
        }
    }

    private void reap() {
        long now = System.nanoTime();
        for (Entry e : entries.values()) {
            if (!e.lock.tryLock()) continue;
            try {
                if (e.served != null && e.users == 0 && e.expiresAt != Long.MAX_VALUE && now - e.expiresAt >= 0) unload(e);
            } catch (RuntimeException ex) {
                LOG.log(System.Logger.Level.WARNING, "unloading " + e.name + " failed: " + ex);
            } finally {
                e.lock.unlock();
            }
        }
    }

    /**
     * Forgets the store model {@code name} after it was deleted or replaced in the store (as Ollama unloads a deleted
     * model): unloaded now when idle, else when its running requests end; the next request resolves the name afresh.
     */
    public void forget(String name) {
        if (pinned) return;
        for (String key : List.copyOf(entries.keySet())) {
            if (!key.equalsIgnoreCase(name)) continue;
            Entry e = entries.remove(key);
            if (e == null) continue;
            e.lock.lock();
            try {
                e.retired = true;
                if (e.users == 0) unload(e);
                else if (e.served != null) retiring.add(e);
            } finally {
                e.lock.unlock();
            }
        }
    }

    /** The store the server reads ({@code OLLAMA_MODELS}). */
    public Path storeRoot() { return resolver.store(); }

    /** Unloads e (lock held). */
    private void unload(Entry e) {
        ServedModel s = e.served;
        retiring.remove(e);
        if (s == null) return;
        e.served = null;
        e.expiresAt = Long.MAX_VALUE;
        s.close();
        LOG.log(System.Logger.Level.INFO, "unloaded " + e.name);
    }

    /** The sha256 in an Ollama blob's file name ({@code sha256-<hex>}), else null. */
    private static String blobDigest(Path path) {
        String f = path.getFileName().toString();
        return f.matches("sha256-[0-9a-f]{64}") ? f.substring(7) : null;
    }

    /** Unloads every model. */
    @Override
    public void close() {
        if (reaper != null) reaper.shutdownNow();
        List<Entry> all = new ArrayList<>(entries.values());
        all.addAll(retiring);
        for (Entry e : all) {
            e.lock.lock();
            try {
                unload(e);
            } catch (RuntimeException ex) {
                LOG.log(System.Logger.Level.WARNING, "unloading " + e.name + " failed: " + ex);
            } finally {
                e.lock.unlock();
            }
        }
    }
}
