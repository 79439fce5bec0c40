// Runs an emulated Metal grid (see metal_stdlib): threadgroups one after another; in each, one OS thread per GPU
// thread, linear index x + y·tx + z·tx·ty, lane = index % simd, SIMD group = index / simd.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

struct ThreadIds {
    uint3 threadgroup_position_in_grid;
    uint3 thread_position_in_threadgroup;
    uint thread_index_in_threadgroup;
    uint3 threads_per_threadgroup;
    uint thread_index_in_simdgroup;
    uint simdgroup_index_in_threadgroup;
};

inline void run_grid(uint3 groups, uint3 size, uint simd, const std::function<void(const ThreadIds&)>& kernel_call) {
    const uint n = size.x * size.y * size.z;
    if (n % simd != 0) { std::fprintf(stderr, "threadgroup of %u threads is not whole SIMD groups of %u\n", n, simd); std::exit(3); }
    const uint simd_groups = n / simd;
    for (uint gz = 0; gz < groups.z; gz++)
    for (uint gy = 0; gy < groups.y; gy++)
    for (uint gx = 0; gx < groups.x; gx++) {
        std::barrier<> group(n);
        std::vector<std::unique_ptr<std::barrier<>>> simd_barriers;
        for (uint s = 0; s < simd_groups; s++) simd_barriers.push_back(std::make_unique<std::barrier<>>(simd));
        std::vector<float> lanes(n);
        std::vector<std::thread> threads;
        for (uint i = 0; i < n; i++) {
            threads.emplace_back([&, i] {
                uint s = i / simd;
                emulated = EmulatedThread{&group, simd_barriers[s].get(), lanes.data() + s * simd, i % simd, simd};
                ThreadIds ids{{gx, gy, gz}, {i % size.x, (i / size.x) % size.y, i / (size.x * size.y)}, i, size, i % simd, s};
                kernel_call(ids);
            });
        }
        for (auto& t : threads) t.join();
    }
}

template <typename E>
inline std::vector<E> read_file(const char* path, size_t count) {
    std::vector<E> v(count);
    FILE* f = std::fopen(path, "rb");
    if (!f || std::fread(v.data(), sizeof(E), count, f) != count) { std::fprintf(stderr, "cannot read %s\n", path); std::exit(4); }
    std::fclose(f);
    return v;
}

template <typename E>
inline void write_file(const char* path, const std::vector<E>& v) {
    FILE* f = std::fopen(path, "wb");
    if (!f || std::fwrite(v.data(), sizeof(E), v.size(), f) != v.size()) { std::fprintf(stderr, "cannot write %s\n", path); std::exit(5); }
    std::fclose(f);
}
