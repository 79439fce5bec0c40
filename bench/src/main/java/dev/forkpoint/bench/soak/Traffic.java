package dev.forkpoint.bench.soak;

import com.fasterxml.jackson.databind.node.ObjectNode;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Well-formed requests to one running server: its address ({@link RawHttp}), the model name it serves and the API key
 * it wants (null when none). Immutable; a restarted server on another port gets a new one.
 */
record Traffic(RawHttp http, String model, String apiKey) {

    /** Host, content type and the API's key header. */
    List<String> headers(Api api) {
        List<String> h = new ArrayList<>();
        h.add("Host: " + http.hostHeader());
        h.add("Content-Type: application/json");
        h.add("Accept: */*");
        h.addAll(api.authHeaders(apiKey));
        return h;
    }

    RawRequest post(Api api, ObjectNode body) {
        return post(api, body.toString().getBytes(StandardCharsets.UTF_8));
    }

    RawRequest post(Api api, byte[] body) {
        return new RawRequest("POST", api.path, headers(api), new BodyPlan.Whole(body));
    }

    /** A GET with the key (as OpenAI sends it) where one is set. */
    RawRequest get(String path) {
        List<String> h = new ArrayList<>();
        h.add("Host: " + http.hostHeader());
        if (apiKey != null) h.add("Authorization: Bearer " + apiKey);
        return new RawRequest("GET", path, h, new BodyPlan.None());
    }
}
