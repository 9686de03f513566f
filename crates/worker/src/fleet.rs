//! Several targets behind one backend: each request goes to one [`Worker`] chosen by a
//! [`bench_core::Balancer`], and its record says which ([`RequestRecord::target`]). One
//! target is the worker itself, behind a single branch.

use bench_core::{
    Backend, Balance, Balancer, CancellationToken, Dispatch, RequestRecord, RequestSpec, Silent,
    TurnRequest,
};

use crate::Worker;

/// The workers of a run, one per target, sharing its load by a [`Balance`]. Every target must
/// serve the same model and API: the requests are the same whichever receives them.
#[derive(Debug)]
pub struct Fleet {
    /// The first target's worker (the only one without `many`).
    first: Worker,
    /// Several targets: every worker, the first included, and the balancer.
    many: Option<Box<Many>>,
}

#[derive(Debug)]
struct Many {
    workers: Vec<Worker>,
    balancer: Balancer,
}

impl Fleet {
    /// One target: every request goes to `worker`, and records name no target.
    pub fn one(worker: Worker) -> Self {
        Self {
            first: worker,
            many: None,
        }
    }

    /// `first` and `rest`, in this order (their indices in records and reports), sharing the
    /// load by `balance`; with `rest` empty, [`Fleet::one`].
    pub fn new(first: Worker, rest: Vec<Worker>, balance: Balance) -> Self {
        if rest.is_empty() {
            return Self::one(first);
        }
        let mut workers = Vec::with_capacity(rest.len() + 1);
        workers.push(first.clone());
        workers.extend(rest);
        let balancer = Balancer::new(balance, workers.len());
        Self {
            first,
            many: Some(Box::new(Many { workers, balancer })),
        }
    }

    /// The first target's worker: the model, the server's clock and the report's target come
    /// from it.
    pub fn first(&self) -> &Worker {
        &self.first
    }

    /// Every worker, in target order.
    pub fn workers(&self) -> &[Worker] {
        match &self.many {
            None => std::slice::from_ref(&self.first),
            Some(m) => &m.workers,
        }
    }

    /// The URL requests go to at each target (credentials and query removed), in target
    /// order; empty with one target (nothing is counted per target then).
    pub fn shared_urls(&self) -> Vec<String> {
        match &self.many {
            None => Vec::new(),
            Some(m) => m.workers.iter().map(Worker::request_url).collect(),
        }
    }

    /// Requests resent so far, every target's together ([`Worker::resent_requests`]).
    pub fn resent_requests(&self) -> u64 {
        self.workers().iter().map(Worker::resent_requests).sum()
    }

    /// Unknown `/v1/responses` events ignored so far, every target's together.
    pub fn ignored_events(&self) -> u64 {
        self.workers().iter().map(Worker::ignored_events).sum()
    }
}

impl Many {
    async fn send(
        &self,
        spec: RequestSpec,
        dispatch: Dispatch,
        cancel: CancellationToken,
    ) -> RequestRecord {
        let to = self.balancer.assign();
        let mut rec = self.workers[to.index()].send(spec, dispatch, cancel).await;
        rec.target = Some(to.index() as u32);
        rec
    }

    async fn send_turn(
        &self,
        turn: TurnRequest,
        dispatch: Dispatch,
        cancel: CancellationToken,
    ) -> (RequestRecord, Option<bench_core::Reply>) {
        let key = turn.session.to_string();
        let to = self.balancer.assign_keyed(Some(key.as_bytes()));
        let (mut rec, reply) = self.workers[to.index()]
            .send_turn(turn, dispatch, cancel)
            .await;
        rec.target = Some(to.index() as u32);
        (rec, reply)
    }
}

impl Backend for Fleet {
    async fn send(
        &self,
        spec: RequestSpec,
        dispatch: Dispatch,
        cancel: CancellationToken,
    ) -> RequestRecord {
        match &self.many {
            None => self.first.send(spec, dispatch, cancel).await,
            Some(m) => m.send(spec, dispatch, cancel).await,
        }
    }

    async fn send_turn(
        &self,
        turn: TurnRequest,
        dispatch: Dispatch,
        cancel: CancellationToken,
    ) -> (RequestRecord, Option<bench_core::Reply>) {
        match &self.many {
            None => self.first.send_turn(turn, dispatch, cancel).await,
            Some(m) => m.send_turn(turn, dispatch, cancel).await,
        }
    }

    fn silent(&self) -> Vec<Silent> {
        match &self.many {
            None => self.first.silent(),
            Some(m) => m.workers.iter().flat_map(Worker::silent).collect(),
        }
    }
}
