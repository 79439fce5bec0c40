package dev.forkpoint.format;

import dev.forkpoint.InvalidInputException;

import java.nio.file.Path;

/**
 * A model file that cannot be used as it is: truncated, corrupt, hostile or of a kind Forkpoint does not
 * support. The message always names the file, the field and, where one applies, the byte offset.
 */
public final class ModelFormatException extends InvalidInputException {
    private final Path file;
    private final String field;
    private final long offset;

    public ModelFormatException(Path file, String field, long offset, String problem) {
        super(file + ": " + field + (offset >= 0 ? " at offset " + offset : "") + ": " + problem);
        this.file = file;
        this.field = field;
        this.offset = offset;
    }

    public ModelFormatException(Path file, String field, String problem) {
        this(file, field, -1, problem);
    }

    public Path file() { return file; }
    public String field() { return field; }
    /** Byte offset of the field in the file, or -1 when the problem is not tied to one place. */
    public long offset() { return offset; }
}
