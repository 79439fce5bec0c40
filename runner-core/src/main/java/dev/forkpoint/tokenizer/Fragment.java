package dev.forkpoint.tokenizer;

/** A piece of input text: either plain text for the model's algorithm or one special token found in it. */
sealed interface Fragment {
    record Text(String text) implements Fragment {}

    record Special(int id) implements Fragment {}
}
