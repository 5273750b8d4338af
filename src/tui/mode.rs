//! The UiMode state machine: which mode the session is in, which overlays sit
//! above it, and what the session is doing right now. Every transition lives
//! here and is unit-tested; the rest of the UI asks this module what input
//! means instead of keeping flags of its own.

/// The interaction mode: decides what a submitted prompt does and which
/// orchestrator runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UiMode {
    /// One model answers each message.
    Chat,
    /// The model may call tools in a loop.
    Agent,
    /// Models converse with each other; a judge may rule.
    Arena,
    /// The same prompt goes to two models side by side.
    Compare,
}

impl UiMode {
    pub fn label(self) -> &'static str {
        match self {
            UiMode::Chat => "Chat",
            UiMode::Agent => "Agent",
            UiMode::Arena => "Arena",
            UiMode::Compare => "Compare",
        }
    }
}

/// A modal layer above the mode; the top one gets keys first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlay {
    Help,
    /// Choose one of `items`; `kind` says what the choice changes.
    Picker(PickerKind),
    /// A tool call waits for the user's decision.
    ToolApproval,
    /// Compare answers are in: pick one (or tie / both bad).
    ComparePick,
}

/// What a picker chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickerKind {
    Endpoint,
    Model,
    /// Jump to a search hit / session.
    Session,
}

/// What the session is doing (shown in the toolbar).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    Idle,
    /// Request sent, no token yet.
    Waiting,
    Streaming,
    RunningTool,
    AwaitingApproval,
    Paused,
    /// The last turn failed; cleared by the next action.
    Error,
}

impl Activity {
    pub fn label(self) -> &'static str {
        match self {
            Activity::Idle => "Idle",
            Activity::Waiting => "Waiting",
            Activity::Streaming => "Streaming",
            Activity::RunningTool => "Running tool",
            Activity::AwaitingApproval => "Awaiting approval",
            Activity::Paused => "Paused",
            Activity::Error => "Error",
        }
    }

    /// A turn is in flight (input submits nothing new; Esc cancels).
    pub fn busy(self) -> bool {
        match self {
            Activity::Waiting | Activity::Streaming | Activity::RunningTool | Activity::AwaitingApproval => true,
            Activity::Idle | Activity::Paused | Activity::Error => false,
        }
    }
}

/// Everything that can move the machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transition {
    SwitchMode(UiMode),
    Open(Overlay),
    /// Close the top overlay.
    Close,
    TurnStarted,
    /// The next request of a run in flight (an arena's next speaker, the judge).
    StepStarted,
    FirstOutput,
    ToolRunning,
    ApprovalNeeded,
    ApprovalGiven,
    TurnEnded {
        failed: bool,
    },
    Pause,
    Resume,
    /// The user acknowledged an error (typed, scrolled, ran a command).
    Acknowledge,
}

/// Why a transition was refused (shown to the user as one line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub &'static str);

/// What a key press means, decided by the top overlay, then the activity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputTarget {
    /// Keys go to the overlay on top.
    Overlay,
    /// Keys go to the prompt editor; Enter submits to the mode's orchestrator.
    Editor,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeMachine {
    mode: UiMode,
    overlays: Vec<Overlay>,
    activity: Activity,
}

impl Default for ModeMachine {
    fn default() -> Self {
        Self::new(UiMode::Chat)
    }
}

impl ModeMachine {
    pub fn new(mode: UiMode) -> Self {
        ModeMachine {
            mode,
            overlays: Vec::new(),
            activity: Activity::Idle,
        }
    }

    pub fn mode(&self) -> UiMode {
        self.mode
    }

    pub fn activity(&self) -> Activity {
        self.activity
    }

    pub fn overlay(&self) -> Option<&Overlay> {
        self.overlays.last()
    }

    pub fn overlays(&self) -> &[Overlay] {
        &self.overlays
    }

    pub fn input_target(&self) -> InputTarget {
        if self.overlays.is_empty() {
            InputTarget::Editor
        } else {
            InputTarget::Overlay
        }
    }

    /// May a new prompt be submitted now?
    pub fn can_submit(&self) -> bool {
        self.overlays.is_empty() && !self.activity.busy() && self.activity != Activity::Paused
    }

    pub fn apply(&mut self, t: Transition) -> Result<(), Refused> {
        use Activity as A;
        match t {
            Transition::SwitchMode(m) => {
                if self.activity.busy() {
                    return Err(Refused("finish or cancel the current answer first (Esc)"));
                }
                self.mode = m;
                self.activity = A::Idle;
                Ok(())
            }
            Transition::Open(o) => {
                if o == Overlay::ToolApproval && !matches!(self.activity, A::RunningTool | A::AwaitingApproval) {
                    return Err(Refused("no tool call is waiting for approval"));
                }
                if self.overlays.last() == Some(&o) {
                    return Ok(()); // already on top
                }
                self.overlays.push(o);
                Ok(())
            }
            Transition::Close => {
                if self.overlays.last() == Some(&Overlay::ToolApproval) && self.activity == A::AwaitingApproval {
                    return Err(Refused("decide on the tool call first: approve, edit or reject"));
                }
                self.overlays.pop().map(|_| ()).ok_or(Refused("nothing to close"))
            }
            Transition::TurnStarted => {
                if self.activity.busy() {
                    return Err(Refused("an answer is already streaming — wait, or cancel it with Esc"));
                }
                if self.activity == A::Paused {
                    return Err(Refused("paused — /resume first"));
                }
                self.activity = A::Waiting;
                Ok(())
            }
            Transition::StepStarted => match self.activity {
                A::Waiting | A::Streaming | A::RunningTool => {
                    self.activity = A::Waiting;
                    Ok(())
                }
                _ => Err(Refused("no run in progress")),
            },
            Transition::FirstOutput => match self.activity {
                A::Waiting | A::Streaming | A::RunningTool => {
                    self.activity = A::Streaming;
                    Ok(())
                }
                _ => Err(Refused("no turn in progress")),
            },
            Transition::ToolRunning => match self.activity {
                A::Waiting | A::Streaming | A::AwaitingApproval | A::RunningTool => {
                    self.activity = A::RunningTool;
                    Ok(())
                }
                _ => Err(Refused("no turn in progress")),
            },
            Transition::ApprovalNeeded => match self.activity {
                A::Waiting | A::Streaming | A::RunningTool => {
                    self.activity = A::AwaitingApproval;
                    self.overlays.retain(|o| *o != Overlay::ToolApproval);
                    self.overlays.push(Overlay::ToolApproval);
                    Ok(())
                }
                _ => Err(Refused("no turn in progress")),
            },
            Transition::ApprovalGiven => {
                if self.activity != A::AwaitingApproval {
                    return Err(Refused("no tool call is waiting for approval"));
                }
                self.overlays.retain(|o| *o != Overlay::ToolApproval);
                self.activity = A::RunningTool;
                Ok(())
            }
            Transition::TurnEnded { failed } => {
                // Ending always succeeds: a stale approval overlay goes with the turn.
                self.overlays.retain(|o| *o != Overlay::ToolApproval);
                self.activity = if failed { A::Error } else { A::Idle };
                Ok(())
            }
            Transition::Pause => match self.mode {
                UiMode::Arena => {
                    self.activity = A::Paused;
                    Ok(())
                }
                UiMode::Chat | UiMode::Agent | UiMode::Compare => Err(Refused("only an arena can be paused")),
            },
            Transition::Resume => {
                if self.activity != A::Paused {
                    return Err(Refused("nothing is paused"));
                }
                // The paused run carries on: its next turn is on its way.
                self.activity = A::Waiting;
                Ok(())
            }
            Transition::Acknowledge => {
                if self.activity == A::Error {
                    self.activity = A::Idle;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m() -> ModeMachine {
        ModeMachine::default()
    }

    #[test]
    fn a_chat_turn_walks_waiting_streaming_idle() {
        let mut s = m();
        assert!(s.can_submit());
        s.apply(Transition::TurnStarted).unwrap();
        assert_eq!(s.activity(), Activity::Waiting);
        assert!(!s.can_submit());
        s.apply(Transition::FirstOutput).unwrap();
        assert_eq!(s.activity(), Activity::Streaming);
        assert!(s.apply(Transition::TurnStarted).is_err(), "one turn at a time");
        s.apply(Transition::TurnEnded { failed: false }).unwrap();
        assert_eq!(s.activity(), Activity::Idle);
        assert!(s.can_submit());
    }

    #[test]
    fn a_failed_turn_shows_error_until_acknowledged_and_does_not_block_input() {
        let mut s = m();
        s.apply(Transition::TurnStarted).unwrap();
        s.apply(Transition::TurnEnded { failed: true }).unwrap();
        assert_eq!(s.activity(), Activity::Error);
        assert!(s.can_submit());
        s.apply(Transition::Acknowledge).unwrap();
        assert_eq!(s.activity(), Activity::Idle);
        // Acknowledge is harmless otherwise.
        s.apply(Transition::Acknowledge).unwrap();
        assert_eq!(s.activity(), Activity::Idle);
    }

    #[test]
    fn modes_switch_only_when_idle() {
        let mut s = m();
        s.apply(Transition::SwitchMode(UiMode::Agent)).unwrap();
        assert_eq!(s.mode(), UiMode::Agent);
        s.apply(Transition::TurnStarted).unwrap();
        assert_eq!(
            s.apply(Transition::SwitchMode(UiMode::Chat)),
            Err(Refused("finish or cancel the current answer first (Esc)"))
        );
        assert_eq!(s.mode(), UiMode::Agent);
        s.apply(Transition::TurnEnded { failed: false }).unwrap();
        s.apply(Transition::SwitchMode(UiMode::Compare)).unwrap();
        assert_eq!(s.mode(), UiMode::Compare);
    }

    #[test]
    fn overlays_stack_take_input_and_close_in_order() {
        let mut s = m();
        assert_eq!(s.input_target(), InputTarget::Editor);
        s.apply(Transition::Open(Overlay::Help)).unwrap();
        s.apply(Transition::Open(Overlay::Help)).unwrap(); // no duplicate on top
        s.apply(Transition::Open(Overlay::Picker(PickerKind::Endpoint)))
            .unwrap();
        assert_eq!(s.overlays().len(), 2);
        assert_eq!(s.input_target(), InputTarget::Overlay);
        assert!(!s.can_submit());
        s.apply(Transition::Close).unwrap();
        assert_eq!(s.overlay(), Some(&Overlay::Help));
        s.apply(Transition::Close).unwrap();
        assert_eq!(s.input_target(), InputTarget::Editor);
        assert!(s.apply(Transition::Close).is_err());
    }

    #[test]
    fn tool_approval_flow_and_its_overlay() {
        let mut s = ModeMachine::new(UiMode::Agent);
        assert!(
            s.apply(Transition::Open(Overlay::ToolApproval)).is_err(),
            "nothing to approve"
        );
        s.apply(Transition::TurnStarted).unwrap();
        s.apply(Transition::FirstOutput).unwrap();
        s.apply(Transition::ApprovalNeeded).unwrap();
        assert_eq!(s.activity(), Activity::AwaitingApproval);
        assert_eq!(s.overlay(), Some(&Overlay::ToolApproval));
        assert!(s.apply(Transition::Close).is_err(), "the decision cannot be skipped");
        s.apply(Transition::Open(Overlay::Help)).unwrap(); // help above approval is fine
        s.apply(Transition::Close).unwrap();
        s.apply(Transition::ApprovalGiven).unwrap();
        assert_eq!(s.activity(), Activity::RunningTool);
        assert_eq!(s.overlay(), None);
        s.apply(Transition::FirstOutput).unwrap();
        s.apply(Transition::ApprovalNeeded).unwrap();
        // Cancelling the turn drops the pending approval.
        s.apply(Transition::TurnEnded { failed: false }).unwrap();
        assert_eq!(s.overlay(), None);
        assert_eq!(s.activity(), Activity::Idle);
    }

    #[test]
    fn only_arenas_pause_and_a_paused_arena_takes_no_turn() {
        let mut s = m();
        assert!(s.apply(Transition::Pause).is_err());
        s.apply(Transition::SwitchMode(UiMode::Arena)).unwrap();
        s.apply(Transition::Pause).unwrap();
        assert_eq!(s.activity(), Activity::Paused);
        assert!(!s.can_submit());
        assert!(s.apply(Transition::TurnStarted).is_err());
        s.apply(Transition::Resume).unwrap();
        assert!(s.apply(Transition::Resume).is_err());
        assert_eq!(s.activity(), Activity::Waiting, "the run goes on");
        s.apply(Transition::StepStarted).unwrap();
        s.apply(Transition::FirstOutput).unwrap();
        s.apply(Transition::StepStarted).unwrap();
        assert_eq!(s.activity(), Activity::Waiting);
        s.apply(Transition::TurnEnded { failed: false }).unwrap();
        assert!(s.apply(Transition::StepStarted).is_err(), "no run");
        s.apply(Transition::TurnStarted).unwrap();
    }

    #[test]
    fn output_events_without_a_turn_are_refused() {
        let mut s = m();
        assert!(s.apply(Transition::FirstOutput).is_err());
        assert!(s.apply(Transition::ToolRunning).is_err());
        assert!(s.apply(Transition::ApprovalGiven).is_err());
    }
}
