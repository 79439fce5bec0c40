package dev.forkpoint.backend.cpu;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The tasks of {@link NativeAttention}'s block-split path for one attention call: the blocks ({@link
 * CpuAttention#KEY_BLOCK} positions, fixed by position) of every split row, each computed by one task into that row's
 * partial record (row t's block b at record {@code firstBlock[t] + b}), and the rows' folds afterwards in block
 * order. A full block that decode rows of two sequences or more read on the same pages (a prefix the cache shares) is
 * one task for all of them (up to {@link CpuAttention#TILE} rows), so its K and V are read once; a row's other blocks
 * are runs of consecutive blocks; tiles of several rows that are not split (prefill chunks beside shared decode rows)
 * are whole tasks, folded in their call. The tasks come costliest first (see {@link Task#cost}).
 *
 * @param tasks      the calls, costliest first
 * @param split      which rows are split into blocks (their partials folded afterwards)
 * @param firstBlock row t's first partial record (prefix sums of the split rows' block counts; tokens + 1 entries)
 */
record AttentionPlan(List<Task> tasks, boolean[] split, int[] firstBlock) {
    /**
     * One native call: {@code rows} (indices into the call's rows, all reading {@code rows[0]}'s pages for blocks
     * [b0, b1)), their {@code lengths}, and {@code records} (each row's first partial record), or null for a whole
     * tile that folds its blocks in the call. {@code cost} orders the tasks: blocks × (1 + rows), one read of a block's
     * K and V and then each row's work on it.
     */
    record Task(int[] rows, int[] lengths, int b0, int b1, int[] records, long cost) {
        boolean whole() {
            return records == null;
        }
    }

    /** Partial records in all. */
    int records() {
        return firstBlock[firstBlock.length - 1];
    }

    /**
     * The plan for {@code rows} at {@code length}; {@code tileStart} (tiles of consecutive rows of one sequence) keeps
     * tiles of several rows whole and splits the one-row tiles (decode rows), null splits every row.
     */
    static AttentionPlan of(CpuAttention.Keys[] rows, int[] length, int[] tileStart, int threads) {
        int tokens = rows.length;
        boolean[] split = new boolean[tokens];
        List<Task> tasks = new ArrayList<>();
        if (tileStart == null) {
            Arrays.fill(split, true);
        } else {
            for (int tile = 0; tile + 1 < tileStart.length; tile++) {
                int t0 = tileStart[tile], t1 = tileStart[tile + 1];
                if (t1 - t0 == 1) {
                    split[t0] = true;
                    continue;
                }
                int[] list = new int[t1 - t0], lens = new int[t1 - t0];
                for (int r = 0; r < list.length; r++) {
                    list[r] = t0 + r;
                    lens[r] = length[t0 + r];
                }
                int n = blocks(length[t1 - 1]);
                tasks.add(new Task(list, lens, 0, n, null, (long) n * (1 + list.length)));
            }
        }
        int[] firstBlock = new int[tokens + 1];
        for (int t = 0; t < tokens; t++) firstBlock[t + 1] = firstBlock[t] + (split[t] ? blocks(length[t]) : 0);
        Set<CpuAttention.Keys> sequences = Collections.newSetFromMap(new IdentityHashMap<>());
        for (int t = 0; t < tokens; t++) if (split[t]) sequences.add(rows[t]);
        boolean mayShare = sequences.size() > 1;
        List<int[]> own = new ArrayList<>();                           // {row, block}
        Map<List<Long>, List<int[]>> shared = new LinkedHashMap<>();   // a full block's pages → the {row, block} that read it
        for (int t = 0; t < tokens; t++) {
            if (!split[t]) continue;
            for (int b = 0, n = blocks(length[t]); b < n; b++) {
                if (mayShare && (b + 1) * CpuAttention.KEY_BLOCK <= length[t]) {
                    shared.computeIfAbsent(CpuAttention.pages(rows[t], b), k -> new ArrayList<>()).add(new int[] {t, b});
                } else {
                    own.add(new int[] {t, b});
                }
            }
        }
        for (List<int[]> same : shared.values()) {
            if (same.size() == 1) {   // read by one row only: one of its own blocks
                own.add(same.getFirst());
                continue;
            }
            for (int from = 0; from < same.size(); from += CpuAttention.TILE) {
                List<int[]> part = same.subList(from, Math.min(same.size(), from + CpuAttention.TILE));
                int[] list = new int[part.size()], lens = new int[part.size()], records = new int[part.size()];
                for (int m = 0; m < list.length; m++) {
                    int t = part.get(m)[0];
                    list[m] = t;
                    lens[m] = length[t];
                    records[m] = firstBlock[t] + part.get(m)[1];
                }
                int b = part.getFirst()[1];
                tasks.add(new Task(list, lens, b, b + 1, records, 1 + list.length));
            }
        }
        // a row's own blocks: consecutive ones one call, cut short enough that the threads share the work at the end
        own.sort(Comparator.<int[]>comparingInt(r -> r[0]).thenComparingInt(r -> r[1]));
        int perTask = Math.max(1, firstBlock[tokens] / (threads * 8));
        for (int i = 0; i < own.size(); ) {
            int t = own.get(i)[0], b0 = own.get(i)[1], b1 = b0 + 1;
            i++;
            while (i < own.size() && own.get(i)[0] == t && own.get(i)[1] == b1 && b1 - b0 < perTask) {
                b1++;
                i++;
            }
            tasks.add(new Task(new int[] {t}, new int[] {length[t]}, b0, b1, new int[] {firstBlock[t] + b0}, 2L * (b1 - b0)));
        }
        tasks.sort(Comparator.comparingLong(Task::cost).reversed());
        return new AttentionPlan(tasks, split, firstBlock);
    }

    /**
     * Whether decode rows (tiles of one row) of two sequences or more read the same pages for their first block (a
     * prefix the cache shares): the block-split path then reads each shared block once for all of them.
     */
    static boolean sharesPages(CpuAttention.Keys[] rows, int[] length, int[] tileStart) {
        Map<List<Long>, CpuAttention.Keys> first = new HashMap<>();
        for (int tile = 0; tile + 1 < tileStart.length; tile++) {
            int t = tileStart[tile];
            if (tileStart[tile + 1] - t != 1 || length[t] < CpuAttention.KEY_BLOCK) continue;
            CpuAttention.Keys seen = first.putIfAbsent(CpuAttention.pages(rows[t], 0), rows[t]);
            if (seen != null && seen != rows[t]) return true;
        }
        return false;
    }

    static int blocks(int length) {
        return (length + CpuAttention.KEY_BLOCK - 1) / CpuAttention.KEY_BLOCK;
    }
}
