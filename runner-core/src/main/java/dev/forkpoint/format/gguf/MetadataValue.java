package dev.forkpoint.format.gguf;

import java.util.List;

/** One GGUF metadata value. Arrays may nest. */
public sealed interface MetadataValue {
    MetadataType type();

    /** Any integer type; UINT64 values above Long.MAX_VALUE are kept as their two's-complement bits. */
    record Int(MetadataType type, long value) implements MetadataValue {
        public Int {
            if (!type.isInteger()) throw new IllegalArgumentException(type + " is not an integer type");
        }
    }

    /** FLOAT32 or FLOAT64; a FLOAT32 value is stored as the double it widens to. */
    record Float(MetadataType type, double value) implements MetadataValue {
        public Float {
            if (type != MetadataType.FLOAT32 && type != MetadataType.FLOAT64) throw new IllegalArgumentException(type + " is not a float type");
        }
    }

    record Bool(boolean value) implements MetadataValue {
        public MetadataType type() { return MetadataType.BOOL; }
    }

    record Str(String value) implements MetadataValue {
        public MetadataType type() { return MetadataType.STRING; }
    }

    record Array(MetadataType elementType, List<MetadataValue> values) implements MetadataValue {
        public Array {
            values = List.copyOf(values);
        }
        public MetadataType type() { return MetadataType.ARRAY; }
    }

    static MetadataValue of(String s) { return new Str(s); }
    static MetadataValue ofU32(long v) { return new Int(MetadataType.UINT32, v); }
    static MetadataValue ofI32(long v) { return new Int(MetadataType.INT32, v); }
    static MetadataValue ofF32(double v) { return new Float(MetadataType.FLOAT32, v); }
    static MetadataValue ofBool(boolean v) { return new Bool(v); }

    static MetadataValue ofStrings(List<String> values) {
        return new Array(MetadataType.STRING, values.stream().<MetadataValue>map(Str::new).toList());
    }

    static MetadataValue ofF32s(float[] values) {
        var list = new java.util.ArrayList<MetadataValue>(values.length);
        for (float v : values) list.add(new Float(MetadataType.FLOAT32, v));
        return new Array(MetadataType.FLOAT32, list);
    }

    static MetadataValue ofI32s(int[] values) {
        var list = new java.util.ArrayList<MetadataValue>(values.length);
        for (int v : values) list.add(new Int(MetadataType.INT32, v));
        return new Array(MetadataType.INT32, list);
    }

    /** A short human-readable rendering (arrays abbreviated). */
    default String describe() {
        return switch (this) {
            case Int i -> Long.toString(i.value());
            case Float f -> Double.toString(f.value());
            case Bool b -> Boolean.toString(b.value());
            case Str s -> s.value().length() > 80 ? '"' + s.value().substring(0, 77) + "...\"" : '"' + s.value() + '"';
            case Array a -> "[" + a.elementType().name().toLowerCase() + " × " + a.values().size() + "]";
        };
    }
}
