package dev.forkpoint.bench.soak;

/** The class of one response, as the soak counts them. */
enum Outcome {
    /** 2xx with a well-formed reply (a stream ended as the API ends one). */
    OK("ok"),
    /** 4xx; for an API-level client fault, with a JSON error body in the API's shape. */
    CLIENT_ERROR("client-error"),
    /** 4xx to an API-level client fault, but the body is not the API's JSON error. */
    BAD_ERROR_SHAPE("bad-error-shape"),
    /** 2xx to a request that a correct server refuses (bad JSON, wrong key, bad Host …). */
    ACCEPTED_FAULT("accepted-fault"),
    /** 5xx (other than 503 with Retry-After), or an internal error reported inside a 200 stream. */
    SERVER_ERROR("server-error"),
    /** 503 with Retry-After: the queue is full. */
    BUSY("busy"),
    /** No complete answer within the deadline. */
    HANG("hang"),
    /** Refused, reset or closed by the server before the answer was complete. */
    RESET("reset"),
    /** The client went away on purpose before the answer was complete. */
    DISCONNECTED("disconnected"),
    /** 2xx whose body is not what the API sends (not JSON, a stream without its end). */
    MALFORMED("malformed"),
    /** A greedy reference request whose text differs from the one recorded at the start. */
    MISMATCH("mismatch");

    final String label;

    Outcome(String label) {
        this.label = label;
    }
}
