"""An undo history: a list of states and the one shown. Recording a state different from the
shown one drops the states after it (the redo branch) and appends it; `back` and `forward`
move along the list. States are compared with `==`."""

from __future__ import annotations

from typing import Generic, TypeVar

State = TypeVar("State")


class History(Generic[State]):
    """The states reached so far, `first` being the initial one; `at` indexes the current."""

    def __init__(self, first: State) -> None:
        self.states: list[State] = [first]
        self.at = 0

    @property
    def current(self) -> State:
        return self.states[self.at]

    def record(self, state: State) -> bool:
        """Make `state` the current one (True) unless it already is (False)."""
        if state == self.current:
            return False
        del self.states[self.at + 1:]
        self.states.append(state)
        self.at += 1
        return True

    def can_back(self) -> bool:
        return self.at > 0

    def can_forward(self) -> bool:
        return self.at < len(self.states) - 1

    def back(self) -> State:
        """The state before the current one, now current (the first stays)."""
        self.at = max(0, self.at - 1)
        return self.current

    def forward(self) -> State:
        """The state after the current one, now current (the last stays)."""
        self.at = min(len(self.states) - 1, self.at + 1)
        return self.current

    def restart(self, state: State) -> None:
        """Forget everything: `state` is the only one."""
        self.states, self.at = [state], 0
