//! The pet's two-line face and its frames.

/// Width of every face line, in cells.
pub const FACE_WIDTH: usize = 9;
/// How long one frame shows while a run is going.
pub const ACTIVE_FRAME_MS: i64 = 900;
/// How long one frame shows while idle: slower, a dozing face should not fidget.
pub const IDLE_FRAME_MS: i64 = 1_800;

/// Awake: open eyes, a different mouth each frame.
const ACTIVE: [[&str; 2]; 3] = [
    ["[ o   o ]", "[  ___  ]"],
    ["[ O   O ]", "[  (_)  ]"],
    ["[ o   o ]", "[  \\_/  ]"],
];
/// Dozing: closed, then half-closed eyes.
const IDLE: [[&str; 2]; 2] = [["[ -   - ]", "[  ___  ]"], ["[ =   = ]", "[  ___  ]"]];

/// The face at `now_ms`: awake while `active`; it stays on its first frame unless
/// `animations` is on, so a reduced-motion terminal sees a still face.
pub fn face(active: bool, animations: bool, now_ms: i64) -> [&'static str; 2] {
    let (frames, period): (&[[&str; 2]], i64) = if active {
        (&ACTIVE, ACTIVE_FRAME_MS)
    } else {
        (&IDLE, IDLE_FRAME_MS)
    };
    if !animations {
        return frames[0];
    }
    // Frames are a function of the clock, not of a counter, so a redraw never skips or
    // repeats a frame because a tick came late.
    let len = frames.len() as i64;
    frames[now_ms.div_euclid(period).rem_euclid(len) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_frame_has_the_same_width() {
        for frame in ACTIVE.iter().chain(IDLE.iter()) {
            for line in frame {
                assert_eq!(line.chars().count(), FACE_WIDTH, "{line:?}");
            }
        }
    }
}
