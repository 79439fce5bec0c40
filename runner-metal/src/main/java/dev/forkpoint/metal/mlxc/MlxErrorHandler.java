package dev.forkpoint.metal.mlxc;

import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * Forkpoint's MLX-C error handler: an FFM upcall ({@code mlx_error_handler_func}) that records MLX's message for the
 * calling thread. MLX-C calls its handler from the failing function's {@code catch}, on the thread that called that
 * function, and then returns non-zero (or an empty handle); {@link Mlx} takes the recorded message after each call
 * and puts it in the {@link MlxException}. MLX-C's default handler prints and calls {@code exit(-1)}, so this one is
 * installed before any other MLX-C call. The upcall never throws (an exception unwinding into C would end the JVM).
 * A message MLX gives on a thread of its own (its CPU scheduler's) is recorded there, not for the caller; such
 * evaluation errors MLX 0.31 does not report to the caller at all (issue 14), which is why Forkpoint checks the data
 * it hands MLX itself.
 */
final class MlxErrorHandler {

    private static final ThreadLocal<String> LAST = new ThreadLocal<>();

    /** The upcall stub, alive for the process (MLX-C keeps the pointer in a global). */
    private static final MemorySegment STUB = createStub();

    private MlxErrorHandler() {}

    /** The handler's function pointer, for {@code mlx_set_error_handler}. */
    static MemorySegment stub() {
        return STUB;
    }

    private static MemorySegment createStub() {
        try {
            var target = MethodHandles.lookup().findStatic(MlxErrorHandler.class, "handle",
                    MethodType.methodType(void.class, MemorySegment.class, MemorySegment.class));
            return Linker.nativeLinker().upcallStub(target, MlxC.mlx_error_handler_func$DESC, Arena.global());
        } catch (ReflectiveOperationException e) {
            throw new AssertionError(e);
        }
    }

    /** {@code void handler(const char* msg, void* data)}; messages of one call are joined. */
    private static void handle(MemorySegment msg, MemorySegment data) {
        try {
            String text = msg.equals(MemorySegment.NULL) ? "(MLX gave no message)"
                    : msg.reinterpret(Long.MAX_VALUE).getString(0);
            String before = LAST.get();
            LAST.set(before == null ? text : before + "; " + text);
        } catch (Throwable t) {
            try {
                LAST.set("(MLX's message could not be read: " + t + ")");
            } catch (Throwable ignored) {
                // nothing may unwind into MLX-C
            }
        }
    }

    /** The message recorded on this thread since the last take, or null; clears it. */
    static String take() {
        String message = LAST.get();
        if (message != null) {
            LAST.remove();
        }
        return message;
    }
}
