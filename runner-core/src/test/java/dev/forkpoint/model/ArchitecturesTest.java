package dev.forkpoint.model;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The registry and the config-key facts each spec owns: every spec is found by its GGUF name and its Hugging Face
 * model_type and by no other spec's; a converted spec's {@link HfLayout#hybrid()} agrees with
 * {@link Architecture.Spec#hybrid()}; and each architecture's facts are the ones written out here (transformers'
 * configuration classes and llama.cpp's converter: which are hybrids, how config.json lays out the experts, which
 * GGUF files tile the value heads), so that a spec's answer cannot drift unnoticed.
 */
class ArchitecturesTest {
    @Test
    void everySpecIsFoundByItsNamesAndNoOtherSpecClaimsThem() {
        Set<String> seen = new HashSet<>();
        for (Architecture.Spec s : Architectures.all()) {
            assertSame(s, Architectures.find(s.name()).orElseThrow(), s.name());
            assertSame(s, Architectures.find(s.hfModelType()).orElseThrow(), s.hfModelType());
            assertTrue(seen.add(s.name()), "name " + s.name() + " registered twice");
            if (!s.hfModelType().equals(s.name())) assertTrue(seen.add(s.hfModelType()), "model type " + s.hfModelType() + " registered twice");
            assertTrue(Architectures.supportedNames().contains(s.name()), s.name());
        }
        assertTrue(Architectures.find("gemma").isEmpty());
    }

    @Test
    void aConvertedSpecsLayoutAgreesOnWhetherItIsAHybrid() {
        for (Architecture.Spec s : Architectures.all()) {
            s.hfLayout().ifPresent(l -> assertEquals(s.hybrid(), l.hybrid(), s.name()));
            if (s.ggufTiledValueHeads()) assertTrue(s.hybrid(), s.name() + ": tiled value heads belong to a hybrid");
        }
    }

    /** GGUF name, hybrid, experts' layout fixed, renormalised (fixed value or norm_topk_prob's default), tiled value heads. */
    @ParameterizedTest
    @CsvSource({
            "llama,     false, false, false, false",
            "qwen2,     false, false, false, false",
            "qwen3,     false, false, false, false",
            "qwen3moe,  false, false, false, false",
            "qwen35,    true,  false, false, true",
            "qwen35moe, true,  true,  true,  true",
            "qwen3next, true,  false, true,  false",
    })
    void eachArchitecturesConfigKeys(String arch, boolean hybrid, boolean fixed, boolean renormalize, boolean tiled) {
        Architecture.Spec s = Architectures.find(arch).orElseThrow();
        assertEquals(hybrid, s.hybrid(), arch + " hybrid");
        assertEquals(new ExpertKeys(fixed, renormalize), s.expertKeys(), arch + " experts");
        assertEquals(tiled, s.ggufTiledValueHeads(), arch + " tiled value heads");
    }

    @Test
    void theTableCoversEveryRegisteredSpec() {
        assertEquals(List.of("llama", "qwen2", "qwen3", "qwen35", "qwen35moe", "qwen3next", "qwen3moe"),
                Architectures.all().stream().map(Architecture.Spec::name).toList());
    }
}
