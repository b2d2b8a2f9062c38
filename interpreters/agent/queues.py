"""The agent's two queues: steering and follow-up messages given while a run goes on, how many
one poll takes (the queue modes), and editing what is queued."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from agentcore.messages import AgentMessage, TextContent, UserMessage
from agentcore.records import is_message, replace

from .state import QueueMode, check_mode, check_timestamp

__all__ = ["AgentQueues"]


class AgentQueues:
    """The queue methods of :class:`~interpreters.agent.Agent` (a base class of it)."""

    clock: Callable[[], int]
    _steering: deque[AgentMessage]
    _follow_ups: deque[AgentMessage]
    _steering_mode: QueueMode
    _follow_up_mode: QueueMode
    _last_queued: int

    @property
    def steering_mode(self) -> QueueMode:
        return self._steering_mode

    @steering_mode.setter
    def steering_mode(self, mode: QueueMode) -> None:
        self._steering_mode = check_mode("steering_mode", mode)

    @property
    def follow_up_mode(self) -> QueueMode:
        return self._follow_up_mode

    @follow_up_mode.setter
    def follow_up_mode(self, mode: QueueMode) -> None:
        self._follow_up_mode = check_mode("follow_up_mode", mode)

    # ------------------------------------------------------------------ queues

    def steer(self, message: AgentMessage | str) -> AgentMessage:
        """Queue a message for the running agent: it is delivered after the current turn (its
        tool calls finish first), before the next model call. A ``str`` becomes a user message
        (see :meth:`follow_up` for its timestamp). Returns the queued message."""
        queued = self._as_message(message, "steer")
        self._steering.append(queued)
        return queued

    def follow_up(self, message: AgentMessage | str) -> AgentMessage:
        """Queue a message delivered when the agent would otherwise stop (after all its tool
        calls and steering). A ``str`` becomes a user message whose timestamp is the clock's,
        or one more than the last such message's when the clock has not moved on since, so
        that each can be edited by its timestamp. Returns the queued message."""
        queued = self._as_message(message, "follow_up")
        self._follow_ups.append(queued)
        return queued

    def update_queued_user_message_by_timestamp(self, timestamp: int, text: str) -> bool:
        """Replace the text of the queued user message with ``timestamp``: the first one, in
        the steering queue then the follow-up queue. Its content becomes ``text`` (a text
        content stays a text; blocks become one text block, images dropped); its timestamp and
        place in the queue stay. Returns ``False`` when no queued user message has that
        timestamp: none was queued, or the run has already taken it (a message the loop polled
        is no longer queued, and the run delivers it as it was). Messages of other roles are
        never matched."""
        check_timestamp("update_queued_user_message_by_timestamp", timestamp)
        if not isinstance(text, str):
            raise TypeError(f"update_queued_user_message_by_timestamp(): text must be a str, "
                            f"not {type(text).__name__}")
        found = self._find_queued_user_message(timestamp)
        if found is None:
            return False
        queue, index = found
        message = queue[index]
        content: str | tuple[TextContent, ...] = (
            text if isinstance(getattr(message, "content", None), str) else (TextContent(text),))
        queue[index] = replace(message, content=content)
        return True

    def remove_queued_user_message_by_timestamp(self, timestamp: int) -> bool:
        """Take the queued user message with ``timestamp`` out of its queue (the first one, in
        the steering queue then the follow-up queue). Returns ``False`` when no queued user
        message has that timestamp (see :meth:`update_queued_user_message_by_timestamp`)."""
        check_timestamp("remove_queued_user_message_by_timestamp", timestamp)
        found = self._find_queued_user_message(timestamp)
        if found is None:
            return False
        queue, index = found
        del queue[index]
        return True

    def _find_queued_user_message(self, timestamp: int) -> tuple[deque[AgentMessage], int] | None:
        for queue in (self._steering, self._follow_ups):
            for index, message in enumerate(queue):
                if getattr(message, "role", None) == "user" and getattr(message, "timestamp", None) == timestamp:
                    return queue, index
        return None

    def clear_steering_queue(self) -> None:
        self._steering.clear()

    def clear_follow_up_queue(self) -> None:
        self._follow_ups.clear()

    def clear_all_queues(self) -> None:
        self._steering.clear()
        self._follow_ups.clear()

    def has_queued_messages(self) -> bool:
        return bool(self._steering) or bool(self._follow_ups)

    @property
    def steering_queue(self) -> tuple[AgentMessage, ...]:
        """The queued steering messages (a snapshot)."""
        return tuple(self._steering)

    @property
    def follow_up_queue(self) -> tuple[AgentMessage, ...]:
        """The queued follow-up messages (a snapshot)."""
        return tuple(self._follow_ups)

    @staticmethod
    def _dequeue(queue: deque[AgentMessage], mode: QueueMode) -> list[AgentMessage]:
        if not queue:
            return []
        if mode == "one-at-a-time":
            return [queue.popleft()]
        taken = list(queue)
        queue.clear()
        return taken

    def _as_message(self, message: AgentMessage | str, method: str) -> AgentMessage:
        if isinstance(message, str):
            timestamp = max(self.clock(), self._last_queued + 1)
            self._last_queued = timestamp
            return UserMessage(message, timestamp=timestamp)
        if not is_message(message):
            raise TypeError(f"Agent.{method}() takes a str or a message (UserMessage, ...), "
                            f"not a {type(message).__name__}")
        return message
