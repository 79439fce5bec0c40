package dev.forkpoint.server;

import java.nio.file.Path;
import java.time.Instant;

/**
 * A model the server can serve (loaded or not), for model lists ({@code /api/tags}, {@code /v1/models}).
 *
 * @param name     the name requests use
 * @param path     the GGUF file
 * @param size     its size in bytes
 * @param modified its modification time
 * @param digest   its sha256 (hex) when known without hashing (Ollama blobs), else null
 * @param loaded   whether it is loaded now
 */
public record ModelListing(String name, Path path, long size, Instant modified, String digest, boolean loaded) {}
