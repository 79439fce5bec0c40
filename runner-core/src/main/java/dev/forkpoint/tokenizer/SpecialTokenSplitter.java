package dev.forkpoint.tokenizer;

import java.util.ArrayList;
import java.util.List;

/**
 * Cuts the special tokens out of input text before the model's algorithm sees it, as llama.cpp does: longest token
 * text first, every non-overlapping occurrence. User-defined tokens are always cut out; control and unknown tokens
 * only when special text is to be parsed.
 */
final class SpecialTokenSplitter {
    private SpecialTokenSplitter() {}

    static List<Fragment> split(String text, Vocabulary vocab, boolean parseSpecial) {
        List<Fragment> fragments = new ArrayList<>();
        if (text.isEmpty()) return fragments;
        fragments.add(new Fragment.Text(text));
        for (int id : vocab.specialByLength) {
            if (!parseSpecial && vocab.types[id] != TokenType.USER_DEFINED) continue;
            String special = vocab.texts[id];
            List<Fragment> next = null;
            for (int f = 0; f < fragments.size(); f++) {
                Fragment fragment = fragments.get(f);
                if (!(fragment instanceof Fragment.Text(String raw)) || raw.indexOf(special) < 0) {
                    if (next != null) next.add(fragment);
                    continue;
                }
                if (next == null) next = new ArrayList<>(fragments.subList(0, f));
                int at = 0;
                for (int hit = raw.indexOf(special); hit >= 0; hit = raw.indexOf(special, at)) {
                    if (hit > at) next.add(new Fragment.Text(raw.substring(at, hit)));
                    next.add(new Fragment.Special(id));
                    at = hit + special.length();
                }
                if (at < raw.length()) next.add(new Fragment.Text(raw.substring(at)));
            }
            if (next != null) fragments = next;
        }
        return fragments;
    }
}
