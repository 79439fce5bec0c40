package dev.forkpoint.metal.objc;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.Locale;
import java.util.Optional;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Compiles Metal source into a compute pipeline through the Objective-C runtime (FFM downcalls to
 * {@code objc_msgSend} with each method's own prototype, as arm64 requires) and reads what only a compiled pipeline
 * knows: {@code maxTotalThreadsPerThreadgroup} (below the device's 1024 when a specialised kernel uses many
 * registers: 896, 832, … — FACTS §1 A), {@code threadExecutionWidth} (the SIMD width), and its static threadgroup
 * memory; with the device's {@code maxThreadgroupMemoryLength} and name. macOS only: {@link #open} says why not
 * elsewhere. One instance holds one {@code MTLDevice}; every object a call creates is released before it returns.
 * Thread-safe (each call runs in its own autorelease pool; Metal's device methods may be called from any thread).
 */
public final class MetalPipelineCompiler implements AutoCloseable {

    static final String OBJC = "/usr/lib/libobjc.A.dylib";
    static final String FOUNDATION = "/System/Library/Frameworks/Foundation.framework/Foundation";
    static final String METAL = "/System/Library/Frameworks/Metal.framework/Metal";

    private static final Linker LINKER = Linker.nativeLinker();

    private final MethodHandle getClass;
    private final MethodHandle selector;
    private final MethodHandle poolPush;
    private final MethodHandle poolPop;
    private final MethodHandle sendId;          // id  f(id, SEL)
    private final MethodHandle sendIdPointer;   // id  f(id, SEL, const void*)
    private final MethodHandle sendIdId;        // id  f(id, SEL, id)
    private final MethodHandle sendIdIdErr;     // id  f(id, SEL, id, NSError**)
    private final MethodHandle sendIdIdIdErr;   // id  f(id, SEL, id, id, NSError**)
    private final MethodHandle sendLong;        // NSUInteger f(id, SEL)
    private final MemorySegment device;
    private final String deviceName;
    private final long maxThreadgroupMemory;

    private MetalPipelineCompiler(SymbolLookup objc, SymbolLookup metal) {
        getClass = handle(objc, "objc_getClass", FunctionDescriptor.of(ADDRESS, ADDRESS));
        selector = handle(objc, "sel_registerName", FunctionDescriptor.of(ADDRESS, ADDRESS));
        poolPush = handle(objc, "objc_autoreleasePoolPush", FunctionDescriptor.of(ADDRESS));
        poolPop = handle(objc, "objc_autoreleasePoolPop", FunctionDescriptor.ofVoid(ADDRESS));
        MemorySegment msgSend = objc.find("objc_msgSend").orElseThrow(() -> new IllegalStateException("libobjc lacks objc_msgSend"));
        sendId = LINKER.downcallHandle(msgSend, FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
        sendIdPointer = LINKER.downcallHandle(msgSend, FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, ADDRESS));
        sendIdId = LINKER.downcallHandle(msgSend, FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, ADDRESS));
        sendIdIdErr = LINKER.downcallHandle(msgSend, FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
        sendIdIdIdErr = LINKER.downcallHandle(msgSend, FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
        sendLong = LINKER.downcallHandle(msgSend, FunctionDescriptor.of(JAVA_LONG, ADDRESS, ADDRESS));
        MethodHandle create = handle(metal, "MTLCreateSystemDefaultDevice", FunctionDescriptor.of(ADDRESS));
        try {
            device = (MemorySegment) create.invokeExact();
        } catch (Throwable t) {
            throw new IllegalStateException("MTLCreateSystemDefaultDevice failed", t);
        }
        if (device.equals(MemorySegment.NULL)) {
            throw new IllegalStateException("MTLCreateSystemDefaultDevice returned no device (no Metal GPU)");
        }
        MemorySegment pool = push();
        try {
            deviceName = string(send(device, "name"));
            maxThreadgroupMemory = sendUnsigned(device, "maxThreadgroupMemoryLength");
        } finally {
            pop(pool);
        }
    }

    /** A compiler on this Mac's default Metal device, or empty with the reason (not macOS, no Metal device, …). */
    public static Result open() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        if (!os.startsWith("mac")) {
            return new Result(Optional.empty(), "Metal pipelines are read on macOS only (this is " + System.getProperty("os.name") + ")");
        }
        try {
            Arena global = Arena.global();
            SymbolLookup objc = SymbolLookup.libraryLookup(OBJC, global);
            SymbolLookup.libraryLookup(FOUNDATION, global);   // NSString, NSError
            SymbolLookup metal = SymbolLookup.libraryLookup(METAL, global);
            return new Result(Optional.of(new MetalPipelineCompiler(objc, metal)), null);
        } catch (IllegalArgumentException | IllegalStateException e) {
            return new Result(Optional.empty(), "Metal is not usable here: " + e.getMessage());
        }
    }

    /** What {@link #open} gave: a compiler, or why there is none. */
    public record Result(Optional<MetalPipelineCompiler> compiler, String reason) {}

    /** The device's name ("Apple M2 Pro"). */
    public String deviceName() {
        return deviceName;
    }

    /** The device's {@code maxThreadgroupMemoryLength} in bytes (32 KiB on Apple GPUs). */
    public long maxThreadgroupMemoryBytes() {
        return maxThreadgroupMemory;
    }

    /**
     * Compiles {@code source} (a whole Metal library) and makes the compute pipeline of its kernel {@code function};
     * returns that pipeline's limits.
     *
     * @throws MetalCompileException with Metal's own message when the source does not compile or has no such kernel
     */
    public PipelineLimits compile(String source, String function) {
        MemorySegment pool = push();
        MemorySegment library = MemorySegment.NULL, kernel = MemorySegment.NULL, pipeline = MemorySegment.NULL;
        try (Arena call = Arena.ofConfined()) {
            MemorySegment error = call.allocate(ADDRESS);
            library = (MemorySegment) sendIdIdIdErr.invokeExact(device, sel("newLibraryWithSource:options:error:"),
                    nsString(source, call), MemorySegment.NULL, error);
            if (library.equals(MemorySegment.NULL)) {
                throw new MetalCompileException(function, "the source does not compile: " + errorText(error));
            }
            kernel = (MemorySegment) sendIdId.invokeExact(library, sel("newFunctionWithName:"), nsString(function, call));
            if (kernel.equals(MemorySegment.NULL)) {
                throw new MetalCompileException(function, "the library has no kernel named " + function);
            }
            error.set(ADDRESS, 0, MemorySegment.NULL);
            pipeline = (MemorySegment) sendIdIdErr.invokeExact(device, sel("newComputePipelineStateWithFunction:error:"),
                    kernel, error);
            if (pipeline.equals(MemorySegment.NULL)) {
                throw new MetalCompileException(function, "no compute pipeline: " + errorText(error));
            }
            return new PipelineLimits(function, (int) sendUnsigned(pipeline, "maxTotalThreadsPerThreadgroup"),
                    (int) sendUnsigned(pipeline, "threadExecutionWidth"),
                    (int) sendUnsigned(pipeline, "staticThreadgroupMemoryLength"), (int) maxThreadgroupMemory);
        } catch (MetalCompileException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("compiling Metal kernel " + function + " failed: " + t, t);
        } finally {
            release(pipeline);
            release(kernel);
            release(library);
            pop(pool);
        }
    }

    @Override
    public void close() {
        release(device);
    }

    // --- the Objective-C runtime -----------------------------------------------------------------------------------

    private MemorySegment sel(String name) {
        try (Arena a = Arena.ofConfined()) {
            return (MemorySegment) selector.invokeExact(a.allocateFrom(name));
        } catch (Throwable t) {
            throw new IllegalStateException("sel_registerName(" + name + ")", t);
        }
    }

    private MemorySegment send(MemorySegment receiver, String method) {
        try {
            return (MemorySegment) sendId.invokeExact(receiver, sel(method));
        } catch (Throwable t) {
            throw new IllegalStateException("[" + method + "]", t);
        }
    }

    private long sendUnsigned(MemorySegment receiver, String method) {
        try {
            return (long) sendLong.invokeExact(receiver, sel(method));
        } catch (Throwable t) {
            throw new IllegalStateException("[" + method + "]", t);
        }
    }

    /** An autoreleased NSString of {@code text}. */
    private MemorySegment nsString(String text, Arena call) throws Throwable {
        MemorySegment cls;
        try (Arena a = Arena.ofConfined()) {
            cls = (MemorySegment) getClass.invokeExact(a.allocateFrom("NSString"));
        }
        return (MemorySegment) sendIdPointer.invokeExact(cls, sel("stringWithUTF8String:"), call.allocateFrom(text));
    }

    /** The text of an NSString (autoreleased results stay valid until the pool is popped). */
    private String string(MemorySegment nsString) {
        if (nsString.equals(MemorySegment.NULL)) return "";
        MemorySegment utf8 = send(nsString, "UTF8String");
        return utf8.equals(MemorySegment.NULL) ? "" : utf8.reinterpret(Long.MAX_VALUE).getString(0);
    }

    private String errorText(MemorySegment errorSlot) {
        MemorySegment error = errorSlot.get(ADDRESS, 0);
        return error.equals(MemorySegment.NULL) ? "(no NSError)" : string(send(error, "localizedDescription"));
    }

    private void release(MemorySegment object) {
        if (!object.equals(MemorySegment.NULL)) send(object, "release");
    }

    private MemorySegment push() {
        try {
            return (MemorySegment) poolPush.invokeExact();
        } catch (Throwable t) {
            throw new IllegalStateException("objc_autoreleasePoolPush", t);
        }
    }

    private void pop(MemorySegment pool) {
        try {
            poolPop.invokeExact(pool);
        } catch (Throwable t) {
            throw new IllegalStateException("objc_autoreleasePoolPop", t);
        }
    }

    private static MethodHandle handle(SymbolLookup lookup, String name, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(lookup.find(name).orElseThrow(() -> new IllegalStateException("no symbol " + name)), descriptor);
    }
}
