//! A model provider's front end over TLS, as the big providers run theirs: a certificate of its own authority,
//! HTTP/2 offered by ALPN (HTTP/1.1 too), and a limit on the streams open on one HTTP/2 connection. Shared by the
//! integration tests and the relay benchmark.

use std::net::SocketAddr;
use std::sync::Arc;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_rustls::rustls;

/// A running TLS front end.
pub struct TlsFrontEnd {
    pub addr: SocketAddr,
    /// The certificate of the authority that signed the server's certificate (PEM), for the client to trust.
    pub ca_pem: String,
}

/// Serves `router` on a free local port over TLS, allowing at most `max_streams` open streams per HTTP/2
/// connection. The server's certificate names `localhost` and `127.0.0.1`.
pub async fn serve(router: axum::Router, max_streams: u32) -> anyhow::Result<TlsFrontEnd> {
    let ca_key = rcgen::KeyPair::generate()?;
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "Quire test authority");
    let ca = ca_params.self_signed(&ca_key)?;
    let key = rcgen::KeyPair::generate()?;
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])?
        .signed_by(&key, &ca, &ca_key)?;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));

    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { continue };
            let _ = tcp.set_nodelay(true);
            let (acceptor, router) = (acceptor.clone(), router.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else { return };
                let mut builder = auto::Builder::new(TokioExecutor::new());
                builder.http2().max_concurrent_streams(max_streams);
                let _ = builder.serve_connection(TokioIo::new(tls), TowerToHyperService::new(router)).await;
            });
        }
    });
    Ok(TlsFrontEnd { addr, ca_pem: ca.pem() })
}
