//! A-MPDU framing arithmetic: the PSDU length of an aggregate.
//!
//! Source: `wifi-model.md` §1.4 (delimiter size) and §2.2 (A-MPDU length). Each subframe is a 4-byte
//! delimiter plus the MPDU, padded to a multiple of 4 bytes except the last one
//! (ns-3 `MpduAggregator::GetSizeIfAggregated`/`CalculatePadding`, ath9k `PADBYTES`).
//!
//! Not modelled here: extra delimiters for a receiver's minimum MPDU start spacing or ath9k's
//! 256-byte minimum subframe padding (driver behaviour; it belongs with the driver model in `mac/`).
//! Lengths are `u32` bytes: the largest PSDU of any standard (HE, 6 500 631 B) fits comfortably.

/// Size of the A-MPDU delimiter in bytes.
pub const AMPDU_DELIMITER_LEN: u32 = 4;

/// Padding that brings a subframe of `4 + mpdu_len` bytes to a multiple of 4.
#[inline]
pub const fn ampdu_padding(mpdu_len: u32) -> u32 {
    (4 - (AMPDU_DELIMITER_LEN + mpdu_len) % 4) % 4
}

/// Bytes one MPDU occupies in an A-MPDU: delimiter + MPDU, plus padding unless it is the last subframe.
#[inline]
pub const fn ampdu_subframe_len(mpdu_len: u32, is_last: bool) -> u32 {
    let pad = if is_last { 0 } else { ampdu_padding(mpdu_len) };
    AMPDU_DELIMITER_LEN + mpdu_len + pad
}

/// PSDU length of an A-MPDU made of these MPDUs (0 for an empty slice).
pub fn ampdu_psdu_len(mpdu_lens: &[u32]) -> u32 {
    mpdu_lens
        .iter()
        .fold(0, |acc, &len| ampdu_len_with(acc, len))
}

/// PSDU length after appending one MPDU to an A-MPDU whose current length is `ampdu_len`
/// (0 = empty): the previous last subframe gains its padding. For building aggregates incrementally.
#[inline]
pub const fn ampdu_len_with(ampdu_len: u32, mpdu_len: u32) -> u32 {
    let padded = if ampdu_len == 0 {
        0
    } else {
        ampdu_len.next_multiple_of(4)
    };
    padded + AMPDU_DELIMITER_LEN + mpdu_len
}

/// PSDU length of `n` equal MPDUs of `mpdu_len` bytes (0 for `n = 0`).
#[inline]
pub const fn ampdu_psdu_len_uniform(n: u32, mpdu_len: u32) -> u32 {
    if n == 0 {
        0
    } else {
        (n - 1) * ampdu_subframe_len(mpdu_len, false) + ampdu_subframe_len(mpdu_len, true)
    }
}

/// Largest `n` with `ampdu_psdu_len_uniform(n, mpdu_len) <= max_len`.
#[inline]
pub const fn max_uniform_subframes(mpdu_len: u32, max_len: u32) -> u32 {
    let last = ampdu_subframe_len(mpdu_len, true);
    if max_len < last {
        0
    } else {
        1 + (max_len - last) / ampdu_subframe_len(mpdu_len, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn spec_examples() {
        // 1500 B IP → 1538 / 1554 B MPDU → 1542 / 1558 B subframe, 1544 / 1560 when padded.
        assert_eq!(ampdu_subframe_len(1538, true), 1542);
        assert_eq!(ampdu_subframe_len(1538, false), 1544);
        assert_eq!(ampdu_subframe_len(1554, true), 1558);
        assert_eq!(ampdu_subframe_len(1554, false), 1560);
        // §2.2 table: n × 1538 B.
        for (n, len) in [(2, 3086), (4, 6174), (8, 12350), (16, 24702), (32, 49406)] {
            assert_eq!(ampdu_psdu_len(&vec![1538; n]), len);
            assert_eq!(ampdu_psdu_len_uniform(n as u32, 1538), len);
        }
        assert_eq!(ampdu_psdu_len(&[]), 0);
        assert_eq!(ampdu_psdu_len(&[100, 101, 102]), 104 + 108 + 106);
    }

    proptest! {
        #[test]
        fn incremental_equals_batch(lens in proptest::collection::vec(1u32..3000, 0..40)) {
            let total = ampdu_psdu_len(&lens);
            let by_subframe: u32 = lens.iter().enumerate()
                .map(|(i, &l)| ampdu_subframe_len(l, i + 1 == lens.len())).sum();
            prop_assert_eq!(total, by_subframe);
        }

        #[test]
        fn uniform_capacity(mpdu in 1u32..5000, max in 0u32..200_000) {
            let n = max_uniform_subframes(mpdu, max);
            prop_assert!(ampdu_psdu_len_uniform(n, mpdu) <= max);
            prop_assert!(ampdu_psdu_len_uniform(n + 1, mpdu) > max);
        }
    }
}
