//! A small ring buffer with a fixed capacity.

use std::fmt;

/// Errors returned by [`Ring`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RingError {
    /// The buffer is full.
    Full,
    /// The buffer is empty.
    Empty,
}

impl fmt::Display for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RingError::Full => write!(f, "ring is full"),
            RingError::Empty => write!(f, "ring is empty"),
        }
    }
}

/// A fixed-capacity FIFO queue.
#[derive(Debug)]
pub struct Ring<T> {
    slots: Vec<Option<T>>,
    head: usize,
    len: usize,
}

impl<T> Ring<T> {
    /// Creates a ring that holds at most `capacity` items.
    pub fn with_capacity(capacity: usize) -> Self {
        let mut slots = Vec::with_capacity(capacity);
        slots.resize_with(capacity, || None);
        Ring { slots, head: 0, len: 0 }
    }

    /// Pushes an item at the back.
    pub fn push(&mut self, item: T) -> Result<(), RingError> {
        if self.len == self.slots.len() {
            return Err(RingError::Full);
        }
        let tail = (self.head + self.len) % self.slots.len();
        self.slots[tail] = Some(item);
        self.len += 1;
        Ok(())
    }

    /// Pops the front item.
    pub fn pop(&mut self) -> Result<T, RingError> {
        let item = self.slots[self.head].take().ok_or(RingError::Empty)?;
        self.head = (self.head + 1) % self.slots.len();
        self.len -= 1;
        Ok(item)
    }
}

mod 内部 {
    // 日本語の識別子も使える
    pub fn ユーザー名() -> &'static str {
        "名無し"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_then_pop() {
        let mut r = Ring::with_capacity(2);
        r.push(1).unwrap();
        r.push(2).unwrap();
        assert_eq!(r.push(3), Err(RingError::Full));
        assert_eq!(r.pop(), Ok(1));
        assert_eq!(crate::内部::ユーザー名(), "名無し");
    }
}
