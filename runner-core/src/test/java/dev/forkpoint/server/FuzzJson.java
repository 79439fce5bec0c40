package dev.forkpoint.server;

import com.fasterxml.jackson.databind.JsonNode;

/** The server's own body parsing and binding, for the request fuzz targets of the API packages. */
public final class FuzzJson {
    private FuzzJson() {}

    /** A request body as the server parses it: a {@link BadFieldException} for empty or malformed JSON. */
    public static JsonNode parse(byte[] body) {
        return Json.parse(body);
    }

    /** A parsed body bound to a request record as {@link Json#read} binds it (which requires a JSON object). */
    public static <T> T bind(JsonNode tree, Class<T> type) {
        if (!tree.isObject()) throw new BadFieldException("", "request body must be a JSON object, got " + Json.describe(tree));
        return Json.bind(tree, type);
    }
}
