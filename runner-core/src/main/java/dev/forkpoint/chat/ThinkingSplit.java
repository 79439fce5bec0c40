package dev.forkpoint.chat;

/**
 * A piece of model output divided by {@link ThinkingParser}: the part that belongs to the thinking block and the part
 * that belongs to the answer. Within one piece the thinking always comes first (a reply thinks, then answers).
 *
 * @param thinking text of the thinking block, without its tags ("" when none)
 * @param content  text of the answer ("" when none)
 */
public record ThinkingSplit(String thinking, String content) {
    public static final ThinkingSplit EMPTY = new ThinkingSplit("", "");

    public ThinkingSplit {
        if (thinking == null) thinking = "";
        if (content == null) content = "";
    }

    /** Whether both parts are empty. */
    public boolean isEmpty() {
        return thinking.isEmpty() && content.isEmpty();
    }
}
