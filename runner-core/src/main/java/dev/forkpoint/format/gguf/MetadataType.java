package dev.forkpoint.format.gguf;

/** The value types of GGUF metadata, with their ids and the fixed size of a scalar (0 for string/array). */
public enum MetadataType {
    UINT8(0, 1), INT8(1, 1), UINT16(2, 2), INT16(3, 2), UINT32(4, 4), INT32(5, 4), FLOAT32(6, 4), BOOL(7, 1),
    STRING(8, 0), ARRAY(9, 0), UINT64(10, 8), INT64(11, 8), FLOAT64(12, 8);

    final int id;
    final int size;

    MetadataType(int id, int size) {
        this.id = id;
        this.size = size;
    }

    public int id() { return id; }

    /** The smallest number of bytes one value of this type takes in a file (used to bound counts). */
    int minBytes() {
        return switch (this) {
            case STRING -> 8;          // uint64 length
            case ARRAY -> 12;          // uint32 element type + uint64 count
            default -> size;
        };
    }

    boolean isInteger() {
        return switch (this) {
            case UINT8, INT8, UINT16, INT16, UINT32, INT32, UINT64, INT64 -> true;
            default -> false;
        };
    }

    static MetadataType byId(int id) {
        for (MetadataType t : values()) {
            if (t.id == id) return t;
        }
        return null;
    }
}
