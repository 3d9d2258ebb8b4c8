//! A vector with the name of the model that made it.

use std::sync::Arc;

use serde::ser::{Serialize, SerializeStruct, Serializer};

use crate::EmbedError;

/// An L2-normalised vector, the name of the model that computed it and (as its length) its
/// dimension. Built only through [`Embedding::new`], so every value is normalised and finite.
#[derive(Debug, Clone, PartialEq)]
pub struct Embedding {
    model: Arc<str>,
    vector: Vec<f32>,
}

impl Embedding {
    /// Normalises `vector` to unit length. Fails on an empty vector, a non-finite component
    /// or a zero vector (which has no direction to compare).
    pub fn new(model: impl Into<Arc<str>>, mut vector: Vec<f32>) -> Result<Self, EmbedError> {
        let model = model.into();
        if vector.is_empty() {
            return Err(EmbedError::BadVector(format!("{model}: an empty vector")));
        }
        if let Some(i) = vector.iter().position(|x| !x.is_finite()) {
            return Err(EmbedError::BadVector(format!(
                "{model}: component {i} is {}",
                vector[i]
            )));
        }
        // Summed in f64: 384+ squares of small f32s lose digits otherwise.
        let norm = vector
            .iter()
            .map(|&x| f64::from(x) * f64::from(x))
            .sum::<f64>()
            .sqrt();
        if norm == 0.0 {
            return Err(EmbedError::BadVector(format!("{model}: a zero vector")));
        }
        for x in &mut vector {
            *x = (f64::from(*x) / norm) as f32;
        }
        Ok(Embedding { model, vector })
    }

    /// The model that computed this vector.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The vector's length.
    pub fn dimension(&self) -> usize {
        self.vector.len()
    }

    /// The unit-length vector.
    pub fn vector(&self) -> &[f32] {
        &self.vector
    }

    /// The vector, consumed.
    pub fn into_vector(self) -> Vec<f32> {
        self.vector
    }

    /// Cosine similarity in [-1, 1] (the dot product of two unit vectors). Fails when the
    /// two vectors come from different models or have different dimensions: such numbers
    /// would look like similarities and mean nothing.
    pub fn cosine(&self, other: &Embedding) -> Result<f32, EmbedError> {
        if self.model != other.model || self.vector.len() != other.vector.len() {
            return Err(EmbedError::Mismatch {
                left: format!("{} ({} dimensions)", self.model, self.vector.len()),
                right: format!("{} ({} dimensions)", other.model, other.vector.len()),
            });
        }
        let dot: f64 = self
            .vector
            .iter()
            .zip(&other.vector)
            .map(|(&a, &b)| f64::from(a) * f64::from(b))
            .sum();
        Ok(dot.clamp(-1.0, 1.0) as f32)
    }
}

/// [`Embedding::cosine`] as a function.
pub fn cosine(a: &Embedding, b: &Embedding) -> Result<f32, EmbedError> {
    a.cosine(b)
}

/// `{"model": …, "dimension": …, "vector": [...]}`: what `recall embed` prints.
impl Serialize for Embedding {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Embedding", 3)?;
        st.serialize_field("model", &*self.model)?;
        st.serialize_field("dimension", &self.vector.len())?;
        st.serialize_field("vector", &self.vector)?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_normalised() {
        let e = Embedding::new("m", vec![3.0, 4.0]).unwrap();
        assert_eq!(e.vector(), &[0.6, 0.8]);
        assert_eq!(e.dimension(), 2);
        assert_eq!(e.model(), "m");
        let same = Embedding::new("m", vec![30.0, 40.0]).unwrap();
        assert!((e.cosine(&same).unwrap() - 1.0).abs() < 1e-6);
        let orth = Embedding::new("m", vec![-4.0, 3.0]).unwrap();
        assert!(e.cosine(&orth).unwrap().abs() < 1e-6);
    }

    #[test]
    fn bad_vectors_are_refused() {
        for v in [
            vec![],
            vec![0.0, 0.0],
            vec![1.0, f32::NAN],
            vec![f32::INFINITY],
        ] {
            let err = Embedding::new("m", v.clone()).unwrap_err();
            assert!(matches!(err, EmbedError::BadVector(_)), "{v:?}: {err}");
        }
    }

    #[test]
    fn different_models_or_dimensions_are_never_compared() {
        let a = Embedding::new("all-MiniLM-L6-v2", vec![1.0, 0.0]).unwrap();
        let b = Embedding::new("multilingual-e5-small", vec![1.0, 0.0]).unwrap();
        let err = cosine(&a, &b).unwrap_err();
        assert!(matches!(err, EmbedError::Mismatch { .. }), "{err}");
        assert!(err.to_string().contains("multilingual-e5-small"), "{err}");
        let c = Embedding::new("all-MiniLM-L6-v2", vec![1.0, 0.0, 0.0]).unwrap();
        assert!(matches!(
            a.cosine(&c).unwrap_err(),
            EmbedError::Mismatch { .. }
        ));
    }

    #[test]
    fn serialises_model_dimension_and_vector() {
        let e = Embedding::new("m", vec![0.0, 2.0]).unwrap();
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"model":"m","dimension":2,"vector":[0.0,1.0]}"#
        );
    }
}
