"""Profile loading and validation."""

import pytest

from sglang_sim.profile import BUNDLED, ProfileError, load_profile


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_profiles_load(name):
    prof = load_profile(name)
    assert prof["hardware"]["gpu_count"] >= 1
    assert prof["timing"]["decode_base_ms"] > 0


def test_deterministic_profile_has_no_randomness():
    prof = load_profile("deterministic")
    assert prof["timing"]["jitter"] == 0
    assert prof["acceptance"]["deterministic"] is True
    assert prof["model"]["natural_output_sigma"] == 0
    assert prof["seed"] is not None


def test_override_merges_over_default(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("timing:\n  load_time_s: 60\n")
    prof = load_profile(str(path))
    assert prof["timing"]["load_time_s"] == 60.0
    assert prof["timing"]["decode_base_ms"] == load_profile()["timing"]["decode_base_ms"]


@pytest.mark.parametrize("text,fragment", [
    ("timing:\n  decode_base_ms: -1\n", "timing.decode_base_ms: must be >= 0.001"),
    ("timing:\n  jitter: high\n", "timing.jitter: must be a number"),
    ("memory:\n  default_mem_fraction_static: 1.5\n", "memory.default_mem_fraction_static: must be <= 0.99"),
    ("hardware:\n  gpu_count: 2.5\n", "hardware.gpu_count: must be an integer"),
    ("acceptance:\n  greedy: [0.9, 1.2]\n", "acceptance.greedy[1]: must be a probability"),
    ("acceptance:\n  greedy: []\n", "acceptance.greedy: must be a non-empty list"),
    ("acceptance:\n  deterministic: 1\n", "acceptance.deterministic: must be true or false"),
    ("timing:\n  decode_ms: 3\n", "timing.decode_ms: unknown field"),
    ("gpu: {}\n", "gpu: unknown field"),
    ("model: 3\n", "model: must be a mapping"),
    ("- a\n- b\n", "must be a YAML mapping"),
    ("timing: [\n", "not valid YAML"),
])
def test_bad_profiles_name_the_field(tmp_path, text, fragment):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ProfileError) as exc:
        load_profile(str(path))
    assert fragment in str(exc.value)
    assert str(path) in str(exc.value)


def test_missing_profile_file(tmp_path):
    with pytest.raises(ProfileError) as exc:
        load_profile(str(tmp_path / "nope.yaml"))
    assert "cannot read" in str(exc.value)
