//! Manual compactions as tickets (`Db::compact`): the state machine, kept apart from the mutex
//! and condition variable that guard it (`BackgroundState`, `db/background.rs`) so that its
//! guarantee can be checked over every interleaving of its steps.
//!
//! The guarantee: every ticket is answered exactly once — with the result of a full compaction
//! that started after the ticket was issued, or, once the compaction thread is gone, with the
//! error it left — and an answer is never taken by another ticket's caller. A single shared
//! result slot broke both: a second caller's request cleared the first caller's result, and one
//! `compact()` never returned.

use std::collections::HashMap;

use crate::error::{Error, Result};

/// Tickets issued, queued, running and answered.
#[derive(Debug, Default)]
pub(crate) struct ManualCompactions {
    issued: u64,
    /// Waiting for a full compaction that has not started.
    queued: Vec<u64>,
    /// Served by the full compaction that is running.
    running: Vec<u64>,
    /// Answers not yet taken by their callers.
    answers: HashMap<u64, Result<()>>,
    /// The compaction thread has exited: new tickets are refused.
    closed: Option<Error>,
}

impl ManualCompactions {
    /// A caller asks for a full compaction: its ticket, or the error to return at once if the
    /// compaction thread is gone.
    pub(crate) fn issue(&mut self) -> Result<u64> {
        if let Some(error) = &self.closed {
            return Err(error.clone());
        }
        self.issued += 1;
        self.queued.push(self.issued);
        Ok(self.issued)
    }

    /// True if a ticket waits for a compaction to start.
    pub(crate) fn pending(&self) -> bool {
        !self.queued.is_empty()
    }

    /// The compaction thread starts a full compaction: it serves every queued ticket. False if
    /// there was none.
    pub(crate) fn start(&mut self) -> bool {
        self.running = std::mem::take(&mut self.queued);
        !self.running.is_empty()
    }

    /// The running compaction (if any) finished with `result`.
    pub(crate) fn finish(&mut self, result: &Result<()>) {
        for ticket in std::mem::take(&mut self.running) {
            self.answers.insert(ticket, result.clone());
        }
    }

    /// The compaction thread is gone: every ticket not answered yet is answered `error`, and
    /// later tickets are refused with it.
    pub(crate) fn close(&mut self, error: Error) {
        let mut unserved = std::mem::take(&mut self.running);
        unserved.append(&mut self.queued);
        for ticket in unserved {
            self.answers.insert(ticket, Err(error.clone()));
        }
        self.closed = Some(error);
    }

    /// The answer to `ticket`, once (the caller takes it).
    pub(crate) fn take(&mut self, ticket: u64) -> Option<Result<()>> {
        self.answers.remove(&ticket)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One step of a schedule: a caller issues or polls its ticket; the compaction thread starts
    /// or finishes a compaction, or exits.
    #[derive(Debug, Clone, Copy)]
    enum Step {
        Issue(usize),
        Poll(usize),
        Start,
        Finish,
        Exit,
    }

    /// What each caller saw, and which compaction (by start number) served it.
    #[derive(Default)]
    struct Caller {
        ticket: Option<u64>,
        issued_after_starts: u64,
        answer: Option<Result<()>>,
        refused: bool,
    }

    /// Runs a schedule and checks the guarantee; compaction `n` (counting starts from 1)
    /// finishes with `Err(InvalidArgument("n"))` so each answer names its compaction.
    fn run(schedule: &[Step], callers: usize) {
        let mut state = ManualCompactions::default();
        let mut seen: Vec<Caller> = (0..callers).map(|_| Caller::default()).collect();
        let mut starts = 0u64;
        let mut running = false;
        let mut exited = false;
        for &step in schedule {
            match step {
                Step::Issue(c) if seen[c].ticket.is_none() && !seen[c].refused => {
                    match state.issue() {
                        Ok(ticket) => {
                            seen[c].ticket = Some(ticket);
                            seen[c].issued_after_starts = starts;
                        }
                        Err(_) => {
                            assert!(exited, "a ticket was refused before the thread exited");
                            seen[c].refused = true;
                        }
                    }
                }
                Step::Poll(c) => {
                    if let Some(ticket) = seen[c].ticket {
                        if let Some(answer) = state.take(ticket) {
                            assert!(seen[c].answer.is_none(), "answered twice");
                            seen[c].answer = Some(answer);
                        }
                    }
                }
                Step::Start if !running && !exited && state.pending() => {
                    starts += 1;
                    running = state.start();
                }
                Step::Finish if running => {
                    state.finish(&Err(Error::InvalidArgument(starts.to_string())));
                    running = false;
                }
                Step::Exit if !exited => {
                    state.close(Error::Closed);
                    exited = true;
                    running = false;
                }
                _ => {}
            }
        }
        // Drain: the thread finishes what runs, serves what is queued, then exits; every
        // caller polls.
        if running {
            state.finish(&Err(Error::InvalidArgument(starts.to_string())));
        }
        if !exited && state.pending() {
            starts += 1;
            state.start();
            state.finish(&Err(Error::InvalidArgument(starts.to_string())));
        }
        state.close(Error::Closed);
        for caller in &mut seen {
            if let Some(ticket) = caller.ticket {
                if let Some(answer) = state.take(ticket) {
                    assert!(caller.answer.is_none(), "answered twice");
                    caller.answer = Some(answer);
                }
            }
        }
        for caller in &seen {
            let Some(_) = caller.ticket else {
                continue;
            };
            match &caller.answer {
                None => panic!("a ticket was never answered: {schedule:?}"),
                Some(Err(Error::InvalidArgument(n))) => {
                    let n: u64 = n.parse().expect("compaction number");
                    assert!(
                        n > caller.issued_after_starts,
                        "served by compaction {n}, which started before the ticket \
                         (issued after {} starts): {schedule:?}",
                        caller.issued_after_starts
                    );
                }
                Some(Err(Error::Closed)) => {}
                Some(other) => panic!("unexpected answer {other:?}"),
            }
        }
    }

    /// Every schedule of up to seven steps over three callers (each step one of 3 issues, 3
    /// polls, start, finish, exit: 9^7 = 4.8 million schedules).
    #[test]
    fn every_schedule_answers_every_ticket_once_with_a_later_compaction() {
        const CALLERS: usize = 3;
        let steps: Vec<Step> = (0..CALLERS)
            .map(Step::Issue)
            .chain((0..CALLERS).map(Step::Poll))
            .chain([Step::Start, Step::Finish, Step::Exit])
            .collect();
        let length = 7;
        let mut schedule = vec![steps[0]; length];
        let total = steps.len().pow(length as u32);
        for index in 0..total {
            let mut rest = index;
            for slot in schedule.iter_mut() {
                *slot = steps[rest % steps.len()];
                rest /= steps.len();
            }
            run(&schedule, CALLERS);
        }
    }

    #[test]
    fn a_second_request_does_not_clear_the_first_callers_answer() {
        // The schedule that hung `compact()` with a shared result slot: A asks, the compaction
        // runs and answers, B asks before A has looked, A looks.
        let mut state = ManualCompactions::default();
        let a = state.issue().expect("ticket");
        assert!(state.start());
        state.finish(&Ok(()));
        let b = state.issue().expect("ticket");
        assert!(matches!(state.take(a), Some(Ok(()))));
        assert!(state.take(b).is_none(), "b's compaction has not run");
        assert!(state.start());
        state.finish(&Ok(()));
        assert!(matches!(state.take(b), Some(Ok(()))));
    }
}
